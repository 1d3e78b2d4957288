import { randomUUID } from 'node:crypto';
import type { HeldBatch, UsageJournal } from './journal.js';
import type { UsageRepository } from './usage-repository.js';
import {
  emptyKeyUsage,
  entryOf,
  mergeKeyUsage,
  requestsIn,
  type PendingPart,
  type PendingUsage,
  type UsageBatch,
  type UsageSink,
} from './usage.js';

/** A held batch, and whether `applyBatch` may have run with it (then it keeps its id and content). */
interface Held extends HeldBatch {
  sent: boolean;
}

/**
 * Single node: each batch goes straight into the database (Postgres, or SQLite when embedded) in one
 * transaction, under a batch id given when it is handed over. A commit whose answer was lost (a query
 * timeout during COMMIT) is applied again under the same id, which the database then skips.
 *
 * While the database refuses, the batches handed over meanwhile are merged into one: none of them has
 * been sent, so none can have been applied, and one id for their sum counts each request once. What
 * is held then grows with the keys, paths and customers seen, not with the seconds of the outage.
 */
export class DatabaseUsageSink implements UsageSink, PendingUsage {
  private readonly held: Held[];
  /** The journal holds batches of an earlier process not yet applied. */
  private journalInUse: boolean;

  /**
   * `journal`: where what cannot be written before exit is kept; what an earlier process kept there
   * is held again under its batch ids (it may have been applied: it is never merged) and applied
   * with the first write.
   */
  constructor(
    private readonly repository: Pick<UsageRepository, 'applyBatch'>,
    private readonly journal?: UsageJournal,
  ) {
    this.held = (journal?.take() ?? []).map((h) => ({ ...h, sent: true }));
    this.journalInUse = this.held.length > 0;
  }

  async write(batch: UsageBatch): Promise<void> {
    if (batch.size > 0) {
      const last = this.held.at(-1);
      if (last !== undefined && !last.sent) {
        for (const [keyId, usage] of batch)
          mergeKeyUsage(entryOf(last.batch, keyId, emptyKeyUsage), usage, false);
      } else {
        this.held.push({ batchId: randomUUID(), batch, sent: false });
      }
    }
    while (this.held.length > 0) {
      const first = this.held[0]!;
      first.sent = true;
      await this.repository.applyBatch(first.batchId, first.batch);
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
    return this.journal.save(this.held);
  }

  heldRequests(): number {
    return this.held.reduce((n, h) => n + requestsIn(h.batch), 0);
  }

  /**
   * Batches not yet known applied, by id: the reader leaves out those Postgres has applied meanwhile.
   * Copies, since a held batch may take in the next one while the reader still adds up.
   */
  pending(keyId: string): Promise<PendingPart[]> {
    const parts: PendingPart[] = [];
    for (const { batchId, batch } of this.held) {
      const usage = batch.get(keyId);
      if (usage === undefined) continue;
      const copy = emptyKeyUsage();
      mergeKeyUsage(copy, usage, false);
      parts.push({ usage: copy, batchId });
    }
    return Promise.resolve(parts);
  }
}
