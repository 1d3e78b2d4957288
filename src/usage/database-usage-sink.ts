import { randomUUID } from 'node:crypto';
import type { HeldBatch, UsageJournal } from './journal.js';
import { isRefusedData, type SetAsideReport } from './set-aside.js';
import type { UsageRepository } from './usage-repository.js';
import { mergeKeyUsage } from './merge-usage.js';
import { partsOf, requestsHeldIn } from './refused-parts.js';
import {
  emptyKeyUsage,
  entryOf,
  type PendingPart,
  type PendingUsage,
  type UsageBatch,
  type UsageSink,
} from './usage.js';

/** A held batch, and whether `applyBatch` may have run with it (then it keeps its id and content). */
interface Held extends HeldBatch {
  sent: boolean;
  /** The database refused its data (set-aside.ts): later batches go on without it. */
  setAside?: boolean;
  /** Taken from the journal: the journal is cleared once no such batch is held. */
  fromJournal?: boolean;
}

/**
 * Single node: each batch goes straight into the database (Postgres, or SQLite when embedded) in one
 * transaction, under a batch id given when it is handed over. A commit whose answer was lost (a query
 * timeout during COMMIT) is applied again under the same id, which the database then skips.
 *
 * While the database refuses, the batches handed over meanwhile are merged into one: none of them has
 * been sent, so none can have been applied, and one id for their sum counts each request once. What
 * is held then grows with the keys, paths and customers seen, not with the seconds of the outage.
 * A batch whose data the database refuses is cut into parts (refused-parts.ts), each applied on its
 * own; a part refused alone is set aside (set-aside.ts): held under its id and tried again at each
 * write, while the batches after it are applied.
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
    /** Logs and counts set-aside batches; absent: they are set aside all the same, unreported. */
    private readonly report?: SetAsideReport,
  ) {
    this.held = (journal?.take() ?? []).map((h) => ({ ...h, sent: true, fromJournal: true }));
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
    // Oldest first; a failure other than a refusal of the data stops here, and the rest waits in order.
    let next = 0;
    while (next < this.held.length) {
      const held = this.held[next]!;
      held.sent = true;
      try {
        await this.repository.applyBatch(held.batchId, held.batch);
      } catch (err) {
        if (!isRefusedData(err)) throw err;
        // Refused, so not applied: its parts go in under ids of their own, and only a part refused alone is
        // set aside. A batch of the journal stays whole: the journal still holds it under its id.
        const parts = held.fromJournal === true ? [] : partsOf(held.batch);
        if (parts.length > 1) {
          this.held.splice(next, 1, ...parts.map((batch) => ({ batchId: randomUUID(), batch, sent: false })));
          continue;
        }
        if (held.setAside !== true) this.report?.setAside(held.batchId, err);
        held.setAside = true;
        next++;
        continue;
      }
      if (held.setAside === true) this.report?.applied(held.batchId);
      this.held.splice(next, 1);
    }
    // Every batch still held is set aside.
    this.report?.count(this.held.length);
    if (this.journalInUse && !this.held.some((h) => h.fromJournal === true)) {
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
    return this.held.reduce((n, h) => n + requestsHeldIn(h.batch), 0);
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
