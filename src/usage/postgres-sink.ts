import { randomUUID } from 'node:crypto';
import type { HeldBatch, UsageJournal } from './journal.js';
import type { UsageRepository } from './usage-repository.js';
import { requestsIn, type PendingPart, type PendingUsage, type UsageBatch, type UsageSink } from './usage.js';

/**
 * Single node: each batch goes straight into Postgres (embedded or not) in one transaction, under a
 * batch id given when it is handed over. A commit whose answer was lost (a query timeout during
 * COMMIT) is applied again under the same id, which Postgres then skips.
 */
export class PostgresUsageSink implements UsageSink, PendingUsage {
  private readonly held: HeldBatch[];
  /** The journal holds batches of an earlier process not yet applied. */
  private journalInUse: boolean;

  /**
   * `journal`: where what cannot be written before exit is kept; what an earlier process kept there
   * is held again under its batch ids and applied with the first write.
   */
  constructor(
    private readonly repository: Pick<UsageRepository, 'applyBatch'>,
    private readonly journal?: UsageJournal,
  ) {
    this.held = journal?.take() ?? [];
    this.journalInUse = this.held.length > 0;
  }

  async write(batch: UsageBatch): Promise<void> {
    if (batch.size > 0) this.held.push({ batchId: randomUUID(), batch });
    while (this.held.length > 0) {
      const { batchId, batch: first } = this.held[0]!;
      await this.repository.applyBatch(batchId, first);
      this.held.shift();
    }
    if (this.journalInUse) {
      this.journal!.clear();
      this.journalInUse = false;
    }
  }

  /** Keeps what is still held in the journal for the next start; returns the requests it could not keep. */
  preserve(): number {
    if (this.journal === undefined || this.held.length === 0) return this.heldRequests();
    const lost = this.journal.save(this.held);
    return lost.reduce((n, h) => n + requestsIn(h.batch), 0);
  }

  heldRequests(): number {
    return this.held.reduce((n, h) => n + requestsIn(h.batch), 0);
  }

  /** Batches not yet known applied, by id: the reader leaves out those Postgres has applied meanwhile. */
  pending(keyId: string): Promise<PendingPart[]> {
    const parts: PendingPart[] = [];
    for (const { batchId, batch } of this.held) {
      const usage = batch.get(keyId);
      if (usage !== undefined) parts.push({ usage, batchId });
    }
    return Promise.resolve(parts);
  }
}
