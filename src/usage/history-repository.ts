import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../store/db.js';
import { sqlDialectOf, type SqlDialect } from '../store/sql-dialect.js';
import { NUMBER_COLUMNS, bucketOf } from './bucket-columns.js';
import type { Granularity } from './granularity.js';
import { addBinText } from './latency-histogram.js';
import { emptyBucket, entryOf, type BucketCounts } from './usage.js';

/** A series' buckets by start (epoch ms); buckets with no usage are absent. */
export type Buckets = Map<number, BucketCounts>;

export interface TopKey {
  readonly keyId: string;
  readonly name: string;
  readonly requests: number;
  readonly rateLimited: number;
}

export interface TopConsumer {
  readonly consumerId: string;
  readonly requests: number;
  readonly rateLimited: number;
}

/**
 * Whose buckets a read sums: a key's (under every consumer it was filed under, or with `consumerId`
 * only under that one), a consumer's (of every key, as filed when the requests were made) or the
 * fleet's (every key).
 */
export type HistoryScope =
  { readonly keyId: string; readonly consumerId?: string } | { readonly consumerId: string } | 'fleet';

/** The condition that picks a scope's rows (always true for the fleet). */
function scopeCondition(scope: HistoryScope): RawBuilder<unknown> {
  if (scope === 'fleet') return sql`true`;
  if (!('keyId' in scope)) return sql`consumer_id = ${scope.consumerId}`;
  const key = sql`key_id = ${scope.keyId}`;
  return scope.consumerId === undefined ? key : sql`${key} and consumer_id = ${scope.consumerId}`;
}

/** The series tables and the column that names each series. */
const SERIES = {
  endpoint: ['usage_endpoint_buckets', 'endpoint'],
  customer: ['usage_customer_buckets', 'customer_id'],
  route: ['usage_route_buckets', 'route_id'],
} as const;
/** What a series is by: a key's endpoints, customers or routes. */
export type SeriesBy = keyof typeof SERIES;

/** Each number column summed over the rows of a group, under its own name. */
const SUMMED_COLUMNS = NUMBER_COLUMNS.map((column) => sql`sum(${sql.ref(column)}) as ${sql.ref(column)}`);

/**
 * A row per bin of each row's latency, joined to it (`from`), with its bin number and requests: what
 * a query that adds the bins of a group reads.
 */
const LATENCY_BINS = {
  postgres: {
    from: (table: string) => sql`jsonb_each_text(${sql.ref(`${table}.latency`)}::jsonb) as bins`,
    bin: sql`bins.key`,
    n: sql`bins.value::bigint`,
  },
  sqlite: {
    from: (table: string) => sql`json_each(${sql.ref(`${table}.latency`)}) as bins`,
    bin: sql`bins.key`,
    n: sql`bins.value`,
  },
} satisfies Record<SqlDialect['name'], unknown>;

/** The lock a replica holds while it prunes: the others skip meanwhile. */
export const ADVISORY_PRUNE_LOCK = 7_110_451_235;

/** Usage over time as stored: a key's, a consumer's and the fleet's buckets, the busiest keys and consumers, and retention. */
export class UsageHistoryRepository {
  private readonly dialect: SqlDialect;

  constructor(private readonly db: Db) {
    this.dialect = sqlDialectOf(db);
  }

  /** A scope's buckets: its rows summed per bucket. */
  async buckets(
    scope: HistoryScope,
    granularity: Granularity,
    fromMs: number,
    toMs: number,
  ): Promise<Buckets> {
    return (
      (await this.summed('usage_buckets', undefined, scope, granularity, fromMs, toMs)).get('') ?? new Map()
    );
  }

  /** The keys with the most requests in the range, most first. */
  async topKeys(granularity: Granularity, fromMs: number, toMs: number, limit: number): Promise<TopKey[]> {
    const rows = await this.db
      .selectFrom('usage_buckets as b')
      .innerJoin('api_keys as k', 'k.id', 'b.key_id')
      .select((eb) => [
        'b.key_id as keyId',
        'k.name as name',
        eb.fn.sum<string>('b.requests').as('requests'),
        eb.fn.sum<string>('b.rate_limited').as('rateLimited'),
      ])
      .where('b.granularity', '=', granularity)
      .where('b.start', '>=', new Date(fromMs))
      .where('b.start', '<', new Date(toMs))
      .groupBy(['b.key_id', 'k.name'])
      .orderBy(sql`sum(b.requests)`, 'desc')
      .orderBy('b.key_id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      keyId: r.keyId,
      name: r.name,
      requests: Number(r.requests),
      rateLimited: Number(r.rateLimited),
    }));
  }

  /** The consumers with the most requests filed under them in the range, most first. */
  async topConsumers(
    granularity: Granularity,
    fromMs: number,
    toMs: number,
    limit: number,
  ): Promise<TopConsumer[]> {
    const rows = await this.db
      .selectFrom('usage_buckets')
      .select((eb) => [
        'consumer_id',
        eb.fn.sum<string>('requests').as('requests'),
        eb.fn.sum<string>('rate_limited').as('rateLimited'),
      ])
      .where('consumer_id', '<>', '')
      .where('granularity', '=', granularity)
      .where('start', '>=', new Date(fromMs))
      .where('start', '<', new Date(toMs))
      .groupBy('consumer_id')
      .orderBy(sql`sum(requests)`, 'desc')
      .orderBy('consumer_id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      consumerId: r.consumer_id,
      requests: Number(r.requests),
      rateLimited: Number(r.rateLimited),
    }));
  }

  /** How many series `series` would answer for the same arguments (from what is stored). */
  async seriesCount(
    scope: HistoryScope,
    by: SeriesBy,
    granularity: 'day' | 'month',
    fromMs: number,
    toMs: number,
  ): Promise<number> {
    const [table, name] = SERIES[by];
    const result = await sql<{ n: string }>`
      select count(distinct ${sql.ref(name)}) as n from ${sql.table(table)}
      where ${scopeCondition(scope)} and granularity = ${granularity} and start >= ${new Date(fromMs)} and start < ${new Date(toMs)}`.execute(
      this.db,
    );
    return Number(result.rows[0]?.n ?? 0);
  }

  /** A scope's usage by endpoint, customer or route, by day or month: one series per name. */
  series(
    scope: HistoryScope,
    by: SeriesBy,
    granularity: 'day' | 'month',
    fromMs: number,
    toMs: number,
  ): Promise<Map<string, Buckets>> {
    const [table, name] = SERIES[by];
    return this.summed(table, name, scope, granularity, fromMs, toMs);
  }

  /**
   * The rows of a table in a scope and range, summed per name (with `name`, a series table's name
   * column; else all under '') and bucket: their numbers, and their latency histograms bin by bin.
   */
  private async summed(
    table: string,
    name: string | undefined,
    scope: HistoryScope,
    granularity: Granularity,
    fromMs: number,
    toMs: number,
  ): Promise<Map<string, Buckets>> {
    const named = name === undefined ? sql`''` : sql.ref(name);
    const groups = name === undefined ? sql`start` : sql`${sql.ref(name)}, start`;
    const where = sql`${scopeCondition(scope)} and granularity = ${granularity} and start >= ${new Date(fromMs)} and start < ${new Date(toMs)}`;
    const bins = LATENCY_BINS[this.dialect.name];
    const [numbers, latency] = await Promise.all([
      sql<Record<string, unknown> & { name: string; start: Date }>`
        select ${named} as name, start, ${sql.join(SUMMED_COLUMNS)} from ${sql.table(table)} where ${where} group by ${groups}`.execute(
        this.db,
      ),
      sql<{ name: string; start: Date; bin: string; n: unknown }>`
        select ${named} as name, start, ${bins.bin} as bin, sum(${bins.n}) as n from ${sql.table(table)}, ${bins.from(table)}
        where ${where} and latency <> '{}' group by ${groups}, ${bins.bin}`.execute(this.db),
    ]);
    const series = new Map<string, Buckets>();
    for (const r of numbers.rows)
      entryOf(series, r.name, () => new Map()).set(r.start.getTime(), bucketOf(r));
    for (const r of latency.rows) {
      const bucket = entryOf(
        entryOf(series, r.name, () => new Map()),
        r.start.getTime(),
        emptyBucket,
      );
      addBinText(bucket.latency, String(r.bin), r.n);
    }
    return series;
  }

  /**
   * Deletes buckets of `granularity` that start before `before`, a few thousand rows per transaction
   * so no lock is held long; one replica at a time (the others skip while one holds the lock).
   * Returns the rows deleted.
   */
  async prune(granularity: Granularity, before: Date, batch = 5_000): Promise<number> {
    const tables =
      granularity === 'day' || granularity === 'month'
        ? ([
            'usage_buckets',
            'usage_endpoint_buckets',
            'usage_customer_buckets',
            'usage_route_buckets',
          ] as const)
        : (['usage_buckets'] as const);
    let deleted = 0;
    for (const table of tables)
      deleted += await deleteInSlices(
        this.db,
        table,
        sql`granularity = ${granularity} and start < ${before}`,
        batch,
      );
    return deleted;
  }
}

/**
 * Deletes the rows of `table` that `where` selects, `batch` at a time, each slice in a transaction of
 * its own under the prune lock (none while another replica prunes); returns the rows deleted.
 */
export async function deleteInSlices(
  db: Db,
  table: string,
  where: RawBuilder<unknown>,
  batch: number,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const n = await db.transaction().execute(async (trx) => {
      const dialect = sqlDialectOf(trx);
      if (!(await dialect.transactionLock(trx, ADVISORY_PRUNE_LOCK, false))) return 0;
      const { rowId } = dialect;
      const result = await sql`
        delete from ${sql.table(table)} where ${rowId} in (
          select ${rowId} from ${sql.table(table)} where ${where} limit ${batch})`.execute(trx);
      return Number(result.numAffectedRows ?? 0n);
    });
    deleted += n;
    if (n < batch) return deleted;
  }
}
