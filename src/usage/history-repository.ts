import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { dialectOf, transactionLock, type Dialect } from '../store/dialect.js';
import type { Granularity } from './granularity.js';
import type { BucketCounts } from './usage.js';

/** A series' buckets by start (epoch ms); buckets with no usage are absent. */
export type Buckets = Map<number, BucketCounts>;

export interface TopKey {
  readonly keyId: string;
  readonly name: string;
  readonly requests: number;
  readonly rateLimited: number;
}

const counts = (r: { requests: unknown; successful: unknown; failed: unknown; rate_limited: unknown; total_duration_ms: unknown }): BucketCounts => ({
  requests: Number(r.requests),
  successful: Number(r.successful),
  failed: Number(r.failed),
  rateLimited: Number(r.rate_limited),
  totalDurationMs: Number(r.total_duration_ms),
});

/** The lock a replica holds while it prunes: the others skip meanwhile. */
export const ADVISORY_PRUNE_LOCK = 7_110_451_235;

/** How a row is named for a batched delete: Postgres' physical row id, SQLite's rowid. */
const ROW_ID = { postgres: sql.raw('ctid'), sqlite: sql.raw('rowid') } satisfies Record<Dialect, unknown>;

/** Usage over time as stored: a key's buckets, the fleet's, the busiest keys, and retention. */
export class UsageHistoryRepository {
  constructor(private readonly db: Db) {}

  async keyBuckets(keyId: string, granularity: Granularity, fromMs: number, toMs: number): Promise<Buckets> {
    const rows = await this.db
      .selectFrom('usage_buckets')
      .select(['start', 'requests', 'successful', 'failed', 'rate_limited', 'total_duration_ms'])
      .where('key_id', '=', keyId)
      .where('granularity', '=', granularity)
      .where('start', '>=', new Date(fromMs))
      .where('start', '<', new Date(toMs))
      .execute();
    return new Map(rows.map((r) => [r.start.getTime(), counts(r)]));
  }

  /** Every key's buckets summed (keys deleted since are gone with their usage). */
  async fleetBuckets(granularity: Granularity, fromMs: number, toMs: number): Promise<Buckets> {
    const rows = await this.db
      .selectFrom('usage_buckets')
      .select((eb) => [
        'start',
        eb.fn.sum<string>('requests').as('requests'),
        eb.fn.sum<string>('successful').as('successful'),
        eb.fn.sum<string>('failed').as('failed'),
        eb.fn.sum<string>('rate_limited').as('rate_limited'),
        eb.fn.sum<number>('total_duration_ms').as('total_duration_ms'),
      ])
      .where('granularity', '=', granularity)
      .where('start', '>=', new Date(fromMs))
      .where('start', '<', new Date(toMs))
      .groupBy('start')
      .execute();
    return new Map(rows.map((r) => [r.start.getTime(), counts(r)]));
  }

  /** The keys with the most requests in the range, most first. */
  async topKeys(granularity: Granularity, fromMs: number, toMs: number, limit: number): Promise<TopKey[]> {
    const rows = await this.db
      .selectFrom('usage_buckets as b')
      .innerJoin('api_keys as k', 'k.id', 'b.key_id')
      .select((eb) => ['b.key_id as keyId', 'k.name as name', eb.fn.sum<string>('b.requests').as('requests'), eb.fn.sum<string>('b.rate_limited').as('rateLimited')])
      .where('b.granularity', '=', granularity)
      .where('b.start', '>=', new Date(fromMs))
      .where('b.start', '<', new Date(toMs))
      .groupBy(['b.key_id', 'k.name'])
      .orderBy(sql`sum(b.requests)`, 'desc')
      .orderBy('b.key_id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ keyId: r.keyId, name: r.name, requests: Number(r.requests), rateLimited: Number(r.rateLimited) }));
  }

  /** How many series `series` would answer for the same arguments (from what is stored). */
  async seriesCount(keyId: string, by: 'endpoint' | 'customer', granularity: 'day' | 'month', fromMs: number, toMs: number): Promise<number> {
    const [table, name] = by === 'endpoint' ? (['usage_endpoint_buckets', 'endpoint'] as const) : (['usage_customer_buckets', 'customer_id'] as const);
    const row = await this.db
      .selectFrom(table)
      .select(sql<string>`count(distinct ${sql.ref(name)})`.as('n'))
      .where('key_id', '=', keyId)
      .where('granularity', '=', granularity)
      .where('start', '>=', new Date(fromMs))
      .where('start', '<', new Date(toMs))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** A key's usage by endpoint or by customer, by day or month: one series per name. */
  async series(keyId: string, by: 'endpoint' | 'customer', granularity: 'day' | 'month', fromMs: number, toMs: number): Promise<Map<string, Buckets>> {
    const rows =
      by === 'endpoint'
        ? await this.db
            .selectFrom('usage_endpoint_buckets')
            .select(['endpoint as name', 'start', 'requests', 'successful', 'failed', 'rate_limited', 'total_duration_ms'])
            .where('key_id', '=', keyId)
            .where('granularity', '=', granularity)
            .where('start', '>=', new Date(fromMs))
            .where('start', '<', new Date(toMs))
            .execute()
        : await this.db
            .selectFrom('usage_customer_buckets')
            .select(['customer_id as name', 'start', 'requests', 'successful', 'failed', 'rate_limited', 'total_duration_ms'])
            .where('key_id', '=', keyId)
            .where('granularity', '=', granularity)
            .where('start', '>=', new Date(fromMs))
            .where('start', '<', new Date(toMs))
            .execute();
    const series = new Map<string, Buckets>();
    for (const r of rows) {
      let buckets = series.get(r.name);
      if (!buckets) series.set(r.name, (buckets = new Map()));
      buckets.set(r.start.getTime(), counts(r));
    }
    return series;
  }

  /**
   * Deletes buckets of `granularity` that start before `before`, a few thousand rows per transaction
   * so no lock is held long; one replica at a time (the others skip while one holds the lock).
   * Returns the rows deleted.
   */
  async prune(granularity: Granularity, before: Date, batch = 5_000): Promise<number> {
    const tables = granularity === 'day' || granularity === 'month' ? (['usage_buckets', 'usage_endpoint_buckets', 'usage_customer_buckets'] as const) : (['usage_buckets'] as const);
    let deleted = 0;
    for (const table of tables) {
      for (;;) {
        const n = await this.db.transaction().execute(async (trx) => {
          if (!(await transactionLock(trx, ADVISORY_PRUNE_LOCK, false))) return 0;
          const rowId = ROW_ID[dialectOf(trx)];
          const result = await sql`
            delete from ${sql.table(table)} where ${rowId} in (
              select ${rowId} from ${sql.table(table)} where granularity = ${granularity} and start < ${before} limit ${batch})`.execute(trx);
          return Number(result.numAffectedRows ?? 0n);
        });
        deleted += n;
        if (n < batch) break;
      }
    }
    return deleted;
  }
}
