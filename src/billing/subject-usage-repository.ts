import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../store/db.js';
import type { BillingExport, ExportSubject } from './billing-export.js';

/** The units a bucket bills: the cost units its requests were charged (docs/guides/billing-export.md, docs/guides/credits.md). */
function billedUnits(): RawBuilder<number> {
  return sql<number>`sum(cost)`;
}

/** A closed bucket of one subject whose stored units differ from what the export has committed to send. */
export interface UnsentBucket {
  readonly subjectId: string;
  readonly startMs: number;
  /** The bucket's stored units now. */
  readonly units: number;
  /** The units committed to send so far (every earlier revision together), and the last revision. */
  readonly sent: number;
  readonly revision: number;
  /** The customer the subject is billed as; undefined: it has none (no externalId, or no such member). */
  readonly customer: string | undefined;
}

/** The range of bucket starts a run reads: [fromMs, toMs), all of them closed. */
export interface BucketRange {
  readonly fromMs: number;
  readonly toMs: number;
}

/**
 * Reads one kind of subject's closed buckets against an export's ledger. One statement, so one
 * snapshot: a usage batch is applied in one transaction, and the statement sees all of it or none of it
 * (what it does not see yet is sent by a later run, as a correction).
 */
export interface SubjectUsageReader {
  unsent(trx: Db, billingExport: BillingExport, range: BucketRange): Promise<UnsentBucket[]>;
}

/** The customer id in a subject's metadata member `field` (text, or a number written as text). */
export function customerIn(metadata: string, field: string): string | undefined {
  let value: unknown;
  try {
    value = (JSON.parse(metadata) as Record<string, unknown>)[field];
  } catch {
    return undefined;
  }
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Who a subject is billed as: its id, externalId and metadata. A deleted key's usage stays (sql/072),
 * so keys are those that exist and those deleted, as they were when deleted.
 */
function owners(trx: Db, subject: ExportSubject) {
  const columns = ['id', 'external_id', 'metadata'] as const;
  return subject === 'key'
    ? trx.selectFrom('api_keys').select(columns).unionAll(trx.selectFrom('deleted_keys').select(columns))
    : trx.selectFrom('consumers').select(columns);
}

/**
 * The closed buckets of one kind of subject (keys, or the consumers their keys belonged to), summed
 * over the rows a key's usage is split into by consumer, billed to the subject's `externalId` (or a
 * member of its metadata).
 */
function unsentBuckets(subject: ExportSubject): SubjectUsageReader {
  const column = subject === 'key' ? 'key_id' : 'consumer_id';
  return {
    async unsent(trx, billingExport, { fromMs, toMs }) {
      const sent = sql<number>`coalesce(x.units, 0)`;
      const buckets = trx
        .selectFrom('usage_buckets')
        .select([sql<string>`${sql.ref(column)}`.as('subject_id'), 'start', billedUnits().as('units')])
        .where('granularity', '=', billingExport.interval)
        .where('start', '>=', new Date(fromMs))
        .where('start', '<', new Date(toMs))
        // Usage of a key that belonged to no consumer is filed under ''.
        .where(column, '<>', '')
        .groupBy([column, 'start'])
        .as('b');
      const rows = await trx
        .selectFrom(buckets)
        .innerJoin(owners(trx, subject).as('o'), 'o.id', 'b.subject_id')
        .leftJoin('billing_export_buckets as x', (join) =>
          join
            .on('x.export_id', '=', billingExport.id)
            .onRef('x.subject_id', '=', 'b.subject_id')
            .onRef('x.bucket_start', '=', 'b.start'),
        )
        .select([
          'b.subject_id as subjectId',
          'b.start as start',
          'b.units as units',
          sent.as('sent'),
          sql<number>`coalesce(x.revision, 0)`.as('revision'),
          'o.external_id as externalId',
          'o.metadata as metadata',
        ])
        // Usage only grows: a bucket below what was sent (never expected) is not sent back as negative units.
        .where('b.units', '>', sent)
        .orderBy('b.start')
        .orderBy('b.subject_id')
        .execute();
      const field = billingExport.customerField;
      return rows.map((r) => ({
        subjectId: r.subjectId,
        startMs: new Date(r.start).getTime(),
        units: Number(r.units),
        sent: Number(r.sent),
        revision: Number(r.revision),
        customer: field === null ? r.externalId || undefined : customerIn(r.metadata, field),
      }));
    },
  };
}

/** The reader of each subject: a key's buckets, or its consumer's (filed under the consumer the key belonged to). */
export const SUBJECT_USAGE: Readonly<Record<ExportSubject, SubjectUsageReader>> = {
  key: unsentBuckets('key'),
  consumer: unsentBuckets('consumer'),
};
