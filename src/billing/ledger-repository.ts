import type { Selectable } from 'kysely';
import type { Db } from '../store/db.js';
import { Outbox } from '../store/outbox.js';
import type { BillingExportRunTable } from '../store/schema.js';
import type { BillingExport } from './billing-export.js';
import { BillingExportRepository } from './export-repository.js';
import { idempotencyId } from './idempotency-id.js';
import type { SendOutcome } from './send-outcome.js';
import type { BucketRange, SubjectUsageReader } from './subject-usage-repository.js';
import { usageExportedEvent } from './usage-exported.js';
import type { UsageSend } from './usage-send.js';

/** Rows per INSERT: at most 9 parameters each, far below SQLite's 32,766 and Postgres' 65,535. */
const CHUNK = 500;
/** Subjects a run names as skipped (no customer id); the rest are only counted. */
export const MAX_SKIPPED_LISTED = 100;

/** A send as stored: one revision of one bucket, delivered or waiting. */
export interface StoredSend {
  readonly idempotencyId: string;
  readonly subjectId: string;
  readonly bucketStartMs: number;
  readonly revision: number;
  readonly units: number;
  readonly customer: string;
  readonly attempts: number;
}

/** What a run planned: sends written (not yet sent), and subjects with usage but no customer id. */
export interface Plan {
  readonly planned: number;
  readonly skippedSubjects: readonly string[];
}

export interface RunStart {
  readonly id: string;
  readonly exportId: string;
  readonly startedBy: 'schedule' | 'manual';
  readonly startedAt: Date;
  readonly closedBefore: Date;
}

export interface RunResult {
  readonly planned: number;
  readonly delivered: number;
  readonly failed: number;
  readonly skippedSubjects: readonly string[];
  readonly error: string | null;
}

/** One request a run made, with the send it carried and what the receiver answered. */
export interface RunAttempt extends StoredSend {
  readonly status: number | null;
  readonly error: string | null;
  readonly delivered: boolean;
}

export interface RunRecord extends RunStart, Omit<RunResult, 'skippedSubjects'> {
  /** The order runs started in. */
  readonly seq: number;
  readonly finishedAt: Date | null;
  readonly skippedSubjects: string[];
  readonly attempts: RunAttempt[];
}

const sendColumns = [
  's.idempotency_id as idempotencyId',
  's.subject_id as subjectId',
  's.bucket_start as bucketStart',
  's.revision as revision',
  's.units as units',
  's.customer as customer',
  's.attempts as attempts',
] as const;

const storedSend = (r: {
  idempotencyId: string;
  subjectId: string;
  bucketStart: Date;
  revision: number;
  units: number;
  customer: string;
  attempts: number;
}): StoredSend => ({
  idempotencyId: r.idempotencyId,
  subjectId: r.subjectId,
  bucketStartMs: r.bucketStart.getTime(),
  revision: Number(r.revision),
  units: Number(r.units),
  customer: r.customer,
  attempts: Number(r.attempts),
});

/**
 * What each export has committed to send and what it has sent: the per-bucket ledger, the sends
 * (written before they go out, so every retry carries the same id), the runs and their attempts.
 */
export class LedgerRepository {
  constructor(private readonly db: Db) {}

  /**
   * In one transaction, holding the export's row so that no other replica plans it meanwhile: reads the
   * closed buckets of `range` whose stored units differ from the ledger, and for each writes the next
   * revision's send (the difference) and the ledger's new sum. A subject without a customer id is left
   * as it is, for a later run. Returns undefined when the export was deleted meanwhile.
   */
  async plan(
    exportId: string,
    reader: SubjectUsageReader,
    range: BucketRange,
    now: Date,
  ): Promise<(Plan & { readonly billingExport: BillingExport }) | undefined> {
    return this.db.transaction().execute(async (trx) => {
      // Read under the lock: a PATCH that committed meanwhile (its customerField, say) counts.
      const billingExport = await new BillingExportRepository(trx).get(exportId, true);
      if (!billingExport) return undefined;
      const buckets = await reader.unsent(trx, billingExport, range);
      const skipped = new Set<string>();
      const sends = [];
      const ledger = [];
      for (const b of buckets) {
        if (b.customer === undefined) {
          skipped.add(b.subjectId);
          continue;
        }
        const revision = b.revision + 1;
        const bucketStart = new Date(b.startMs);
        sends.push({
          idempotency_id: idempotencyId(exportId, b.subjectId, b.startMs, revision),
          export_id: exportId,
          subject_id: b.subjectId,
          bucket_start: bucketStart,
          revision,
          units: b.units - b.sent,
          customer: b.customer,
          created_at: now,
          next_attempt_at: now,
        });
        ledger.push({
          export_id: exportId,
          subject_id: b.subjectId,
          bucket_start: bucketStart,
          units: b.units,
          revision,
        });
      }
      for (let i = 0; i < sends.length; i += CHUNK) {
        await trx
          .insertInto('billing_export_sends')
          .values(sends.slice(i, i + CHUNK))
          .execute();
        await trx
          .insertInto('billing_export_buckets')
          .values(ledger.slice(i, i + CHUNK))
          .onConflict((oc) =>
            oc.columns(['export_id', 'subject_id', 'bucket_start']).doUpdateSet((eb) => ({
              units: eb.ref('excluded.units'),
              revision: eb.ref('excluded.revision'),
            })),
          )
          .execute();
      }
      return {
        billingExport,
        planned: sends.length,
        skippedSubjects: [...skipped].slice(0, MAX_SKIPPED_LISTED),
      };
    });
  }

  /**
   * The sends of an export not delivered yet, oldest bucket first: those due by `now`, or all of them
   * (`all`: a run an administrator started does not wait for a refused send's backoff).
   */
  async pending(exportId: string, now: Date, all: boolean, limit: number): Promise<StoredSend[]> {
    const rows = await this.db
      .selectFrom('billing_export_sends as s')
      .select(sendColumns)
      .where('s.export_id', '=', exportId)
      .where('s.delivered_at', 'is', null)
      .$if(!all, (q) => q.where('s.next_attempt_at', '<=', now))
      .orderBy('s.bucket_start')
      .orderBy('s.subject_id')
      .orderBy('s.revision')
      .limit(limit)
      .execute();
    return rows.map(storedSend);
  }

  /**
   * Records the attempts of one request in its run, and each outcome on its send, in one transaction:
   * delivered (the first to record it also writes `usage.exported` to the outbox), or tried once more (a
   * refused send waits until its `retryAt`).
   */
  async recordAttempts(
    runId: string,
    billingExport: BillingExport,
    attempts: readonly { send: UsageSend; outcome: SendOutcome; retryAt: Date }[],
    at: Date,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const { send, outcome, retryAt } of attempts) {
        const error = outcome.kind === 'delivered' ? null : outcome.error;
        await trx
          .insertInto('billing_export_attempts')
          .values({ run_id: runId, idempotency_id: send.idempotencyId, at, status: outcome.status, error })
          // A run that tries a send twice (never expected) keeps the last answer.
          .onConflict((oc) =>
            oc.columns(['run_id', 'idempotency_id']).doUpdateSet({ at, status: outcome.status, error }),
          )
          .execute();
        const update = trx
          .updateTable('billing_export_sends')
          .where('idempotency_id', '=', send.idempotencyId);
        if (outcome.kind === 'delivered') {
          // Two replicas may deliver one send (the lease does not make it exact): only the first is told.
          const recorded = await update
            .set({ delivered_at: at })
            .where('delivered_at', 'is', null)
            .executeTakeFirst();
          if (recorded.numUpdatedRows > 0n)
            await new Outbox(trx).add([usageExportedEvent(billingExport, send, at)]);
        } else {
          await update
            .set((eb) => ({
              attempts: eb('attempts', '+', 1),
              ...(outcome.kind === 'refused' && { next_attempt_at: retryAt }),
            }))
            .execute();
        }
      }
    });
  }

  async startRun(run: RunStart): Promise<void> {
    await this.db
      .insertInto('billing_export_runs')
      .values({
        id: run.id,
        export_id: run.exportId,
        started_by: run.startedBy,
        started_at: run.startedAt,
        closed_before: run.closedBefore,
      })
      .execute();
  }

  async finishRun(id: string, result: RunResult, finishedAt: Date): Promise<void> {
    await this.db
      .updateTable('billing_export_runs')
      .set({
        finished_at: finishedAt,
        planned: result.planned,
        delivered: result.delivered,
        failed: result.failed,
        skipped_subjects: JSON.stringify(result.skippedSubjects),
        error: result.error,
      })
      .where('id', '=', id)
      .execute();
  }

  /** A scheduled run that found nothing to do is not kept: the log shows runs that did something. */
  async dropRun(id: string): Promise<void> {
    await this.db.deleteFrom('billing_export_runs').where('id', '=', id).execute();
  }

  /** An export's runs, newest first, each with its attempts; `beforeSeq`: the `seq` of the last run of the previous page. */
  async runs(exportId: string, beforeSeq: number | undefined, limit: number): Promise<RunRecord[]> {
    const rows = await this.db
      .selectFrom('billing_export_runs')
      .selectAll()
      .where('export_id', '=', exportId)
      .$if(beforeSeq !== undefined, (q) => q.where('seq', '<', String(beforeSeq)))
      .orderBy('seq', 'desc')
      .limit(limit)
      .execute();
    return this.withAttempts(rows);
  }

  /** One run of an export, with its attempts. */
  async run(exportId: string, id: string): Promise<RunRecord | undefined> {
    const rows = await this.db
      .selectFrom('billing_export_runs')
      .selectAll()
      .where('export_id', '=', exportId)
      .where('id', '=', id)
      .execute();
    return (await this.withAttempts(rows))[0];
  }

  private async withAttempts(rows: Selectable<BillingExportRunTable>[]): Promise<RunRecord[]> {
    if (rows.length === 0) return [];
    const attempts = await this.db
      .selectFrom('billing_export_attempts as a')
      .innerJoin('billing_export_sends as s', 's.idempotency_id', 'a.idempotency_id')
      .select([...sendColumns, 'a.run_id as runId', 'a.status as status', 'a.error as error'])
      .where(
        'a.run_id',
        'in',
        rows.map((r) => r.id),
      )
      .orderBy('s.bucket_start')
      .orderBy('s.subject_id')
      .orderBy('s.revision')
      .execute();
    return rows.map((r) => ({
      seq: Number(r.seq),
      id: r.id,
      exportId: r.export_id,
      startedBy: r.started_by as RunStart['startedBy'],
      startedAt: r.started_at,
      closedBefore: r.closed_before,
      finishedAt: r.finished_at,
      planned: Number(r.planned),
      delivered: Number(r.delivered),
      failed: Number(r.failed),
      skippedSubjects: JSON.parse(r.skipped_subjects) as string[],
      error: r.error,
      attempts: attempts
        .filter((a) => a.runId === r.id)
        // Only a delivered attempt has no error.
        .map((a) => ({
          ...storedSend(a),
          status: a.status === null ? null : Number(a.status),
          error: a.error,
          delivered: a.error === null,
        })),
    }));
  }

  /**
   * Forgets what no run needs any more: runs started before `before` (with their attempts), delivered
   * sends written before it, the ledger of buckets that started before it (older than any run reads),
   * and whom keys deleted before it were billed as (their buckets too are older than any run reads).
   */
  async prune(before: Date): Promise<void> {
    await this.db.deleteFrom('billing_export_runs').where('started_at', '<', before).execute();
    await this.db
      .deleteFrom('billing_export_sends')
      .where('created_at', '<', before)
      .where('delivered_at', 'is not', null)
      .execute();
    await this.db.deleteFrom('billing_export_buckets').where('bucket_start', '<', before).execute();
    await this.db.deleteFrom('deleted_keys').where('deleted_at', '<', before).execute();
  }
}
