import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { dialectOf, lockingRows, type Dialect } from '../store/dialect.js';
import { addBuckets, type KeyBatch } from './bucket-repository.js';
import { seriesPeriods, type SeriesPeriod } from './granularity.js';
import {
  MAX_CUSTOMERS_PER_KEY,
  MAX_ENDPOINTS_PER_KEY,
  OTHER_ENDPOINT,
  addCounts,
  emptyBucket,
  emptyCounts,
  emptyEndpoint,
  entryFor,
  emptyKeyUsage,
  type KeyUsage,
  type UsageBatch,
  type UsageCounts,
} from './usage.js';

/** Rows per INSERT: 6 parameters each stays far below Postgres' 65,535-parameter cap. */
const CHUNK = 1000;
/**
 * Values in one `in (…)` list: a batch may hold any number of keys, and a key any number of new
 * names (a Redis hash grows through a Postgres outage), while a statement takes at most 65,535
 * parameters in Postgres and 32,766 in SQLite.
 */
const IDS_PER_QUERY = 1000;
const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * A batch is retried within seconds of its first apply; a day of ids is far more than enough. The
 * oldest `applied_at` kept, by the database's clock (SQLite stores it in epoch milliseconds).
 */
const BATCH_IDS_KEPT_SINCE = {
  postgres: sql<Date>`now() - '1 day'::interval`,
  sqlite: sql<Date>`cast(unixepoch('subsec') * 1000 as integer) - 86400000`,
} satisfies Record<Dialect, unknown>;

/**
 * Where names are capped: a key's totals over its life (the detail), and each day and month of its
 * series (usage over time), so a new month starts with room for the customers it brings.
 */
const NAMES = {
  endpoints: { table: 'usage_endpoints', column: 'endpoint', max: MAX_ENDPOINTS_PER_KEY },
  customers: { table: 'usage_customers', column: 'customer_id', max: MAX_CUSTOMERS_PER_KEY },
  endpointSeries: { table: 'usage_endpoint_buckets', column: 'endpoint', max: MAX_ENDPOINTS_PER_KEY },
  customerSeries: { table: 'usage_customer_buckets', column: 'customer_id', max: MAX_CUSTOMERS_PER_KEY },
} as const;
type Names = (typeof NAMES)[keyof typeof NAMES];

/** The names one cap counts: a key's totals, or one period of its series. */
interface CapScope {
  readonly keyId: string;
  readonly period?: { readonly granularity: 'day' | 'month'; readonly start: number };
}
const scopeId = (keyId: string, period?: CapScope['period']) => (period ? `${keyId}|${period.granularity}|${period.start}` : keyId);

/** `values` in slices short enough for one statement's parameters. */
function* slices<T>(values: readonly T[]): Generator<T[]> {
  for (let i = 0; i < values.length; i += IDS_PER_QUERY) yield values.slice(i, i + IDS_PER_QUERY);
}

/** A key's stored totals with only its busiest customers, and all its customers counted and summed. */
export interface BusiestUsage {
  readonly usage: KeyUsage;
  readonly allCustomers: UsageCounts & { count: number };
}

/** Usage totals in Postgres: batches add to them, the key detail reads them. */
export class UsageRepository {
  private lastPrune = 0;
  private readonly dialect: Dialect;

  constructor(
    private readonly db: Db,
    /** When a batch is applied: the minute and day of usage that arrives without them. */
    private readonly clock: () => number = Date.now,
  ) {
    this.dialect = dialectOf(db);
  }

  /**
   * Adds a batch to the totals in one transaction. With a `batchId`, a batch already applied is
   * skipped (returns false), so a flusher that died after committing can safely apply it again.
   * Usage of keys deleted meanwhile is dropped with them.
   */
  async applyBatch(batchId: string | undefined, batch: UsageBatch): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if (batchId !== undefined) {
        const inserted = await trx
          .insertInto('usage_batches')
          .values({ batch_id: batchId })
          .onConflict((oc) => oc.column('batch_id').doNothing())
          .executeTakeFirst();
        if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) return false;
        // One batch a second would grow the table for ever: drop old ids, at most once an hour.
        if (Date.now() - this.lastPrune > PRUNE_INTERVAL_MS) {
          this.lastPrune = Date.now();
          await trx
            .deleteFrom('usage_batches')
            .where('applied_at', '<', BATCH_IDS_KEPT_SINCE[this.dialect])
            .execute();
        }
      }
      const keyIds = [...batch.keys()];
      if (keyIds.length === 0) return true;
      const nowMs = this.clock();
      const live: { id: string }[] = [];
      for (const ids of slices(keyIds)) {
        // FOR KEY SHARE: a concurrent delete waits for this batch, then removes its rows too.
        live.push(...(await lockingRows(this.dialect, trx.selectFrom('api_keys').select('id').where('id', 'in', ids), 'key share').execute()));
      }
      const liveIds = live.map((k) => k.id);
      const series = new Map(liveIds.map((id) => [id, seriesPeriods(batch.get(id)!, nowMs)]));
      const starts = [...new Set([...series.values()].flatMap((periods) => periods.map((p) => p.start)))];
      const [endpointsHeld, customersHeld, endpointSeriesHeld, customerSeriesHeld] = await Promise.all([
        this.heldCounts(trx, NAMES.endpoints, liveIds),
        this.heldCounts(trx, NAMES.customers, liveIds),
        this.heldCounts(trx, NAMES.endpointSeries, liveIds, starts),
        this.heldCounts(trx, NAMES.customerSeries, liveIds, starts),
      ]);

      const endpointRows: { key_id: string; endpoint: string; requests: number; successful: number; failed: number; total_duration_ms: number }[] = [];
      const customerRows: { key_id: string; customer_id: string; requests: number; successful: number; failed: number }[] = [];
      const overTime: KeyBatch[] = [];
      for (const id of liveIds) {
        const usage = batch.get(id)!;
        const endpoints = await this.capped(trx, NAMES.endpoints, { keyId: id }, usage.endpoints, endpointsHeld, emptyEndpoint);
        for (const [endpoint, u] of endpoints) {
          endpointRows.push({ key_id: id, endpoint, requests: u.requests, successful: u.successful, failed: u.failed, total_duration_ms: u.totalDurationMs });
        }
        const customers = await this.capped(trx, NAMES.customers, { keyId: id }, usage.customers, customersHeld, emptyCounts);
        for (const [customer, u] of customers) {
          customerRows.push({ key_id: id, customer_id: customer, requests: u.requests, successful: u.successful, failed: u.failed });
        }
        const periods: SeriesPeriod[] = [];
        for (const period of series.get(id)!) {
          const scope = { keyId: id, period };
          periods.push({
            ...period,
            endpoints: await this.capped(trx, NAMES.endpointSeries, scope, period.endpoints, endpointSeriesHeld, emptyBucket),
            customers: await this.capped(trx, NAMES.customerSeries, scope, period.customers, customerSeriesHeld, emptyBucket),
          });
        }
        overTime.push({ keyId: id, usage, series: periods });
      }
      await addBuckets(trx, overTime, nowMs);
      for (let i = 0; i < endpointRows.length; i += CHUNK) {
        await trx
          .insertInto('usage_endpoints')
          .values(endpointRows.slice(i, i + CHUNK))
          .onConflict((oc) =>
            oc.columns(['key_id', 'endpoint']).doUpdateSet({
              requests: sql`usage_endpoints.requests + excluded.requests`,
              successful: sql`usage_endpoints.successful + excluded.successful`,
              failed: sql`usage_endpoints.failed + excluded.failed`,
              total_duration_ms: sql`usage_endpoints.total_duration_ms + excluded.total_duration_ms`,
            }),
          )
          .execute();
      }
      for (let i = 0; i < customerRows.length; i += CHUNK) {
        await trx
          .insertInto('usage_customers')
          .values(customerRows.slice(i, i + CHUNK))
          .onConflict((oc) =>
            oc.columns(['key_id', 'customer_id']).doUpdateSet({
              requests: sql`usage_customers.requests + excluded.requests`,
              successful: sql`usage_customers.successful + excluded.successful`,
              failed: sql`usage_customers.failed + excluded.failed`,
            }),
          )
          .execute();
      }
      return true;
    });
  }

  /**
   * Distinct names (other than "(other)") each key already holds in `names`, by scope id: for the
   * totals per key, for the series per key and period starting at one of `starts`.
   */
  private async heldCounts(trx: Db, names: Names, keyIds: readonly string[], starts?: readonly number[]): Promise<Map<string, number>> {
    const held = new Map<string, number>();
    if (starts?.length === 0) return held;
    for (const ids of slices(keyIds)) {
      const rows = await trx
        .selectFrom(names.table)
        .select(['key_id', sql<number>`cast(count(*) as integer)`.as('n')])
        .$if(starts !== undefined, (q) => q.select([sql<'day' | 'month'>`granularity`.as('granularity'), sql<Date>`start`.as('start')]))
        .where('key_id', 'in', ids)
        .where(sql.ref(names.column), '<>', OTHER_ENDPOINT)
        .$if(starts !== undefined, (q) => q.where(sql.ref('start'), 'in', starts!.map((s) => new Date(s))).groupBy([sql.ref('granularity'), sql.ref('start')]))
        .groupBy('key_id')
        .execute();
      for (const r of rows) held.set(scopeId(r.key_id, r.start ? { granularity: r.granularity!, start: r.start.getTime() } : undefined), Number(r.n));
    }
    return held;
  }

  /**
   * Names beyond a cap (paths, customers) fold into "(other)", counting the names the scope already
   * holds; only scopes near the cap cost a query, for which of the batch's names are stored already.
   */
  private async capped<T extends UsageCounts>(trx: Db, names: Names, scope: CapScope, entries: Map<string, T>, heldCounts: ReadonlyMap<string, number>, create: () => T): Promise<Map<string, T>> {
    const held = heldCounts.get(scopeId(scope.keyId, scope.period)) ?? 0;
    if (held + entries.size <= names.max) return entries;
    const capped = new Map<string, T>();
    for (const slice of slices([...entries.keys()])) {
      const existing = await trx
        .selectFrom(names.table)
        .select(sql<string>`${sql.ref(names.column)}`.as('name'))
        .where('key_id', '=', scope.keyId)
        .$if(scope.period !== undefined, (q) => q.where(sql.ref('granularity'), '=', scope.period!.granularity).where(sql.ref('start'), '=', new Date(scope.period!.start)))
        .where(sql.ref(names.column), 'in', slice)
        .execute();
      for (const row of existing) capped.set(row.name, create());
    }
    let count = held;
    for (const [name, u] of entries) {
      const newName = !capped.has(name) && name !== OTHER_ENDPOINT;
      addCounts(entryFor(capped, name, names.max, create, newName ? count : 0), u);
      if (newName && count < names.max) count++;
    }
    return capped;
  }

  /** Which of these batches Postgres has applied. */
  async appliedBatches(batchIds: readonly string[]): Promise<Set<string>> {
    if (batchIds.length === 0) return new Set();
    const rows = await this.db.selectFrom('usage_batches').select('batch_id').where('batch_id', 'in', batchIds).execute();
    return new Set(rows.map((r) => r.batch_id));
  }

  /**
   * `readBusiest` and, in the same snapshot (repeatable read), which of `batchIds` are applied: a
   * batch is in the totals read exactly when it is among those returned, however flushes interleave.
   */
  async readBusiestWithApplied(keyId: string, customers: number, batchIds: readonly string[]): Promise<BusiestUsage & { readonly applied: Set<string> }> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const snapshot = new UsageRepository(trx);
        return { ...(await snapshot.readBusiest(keyId, customers)), applied: await snapshot.appliedBatches(batchIds) };
      });
  }

  /** A key's stored totals. */
  async read(keyId: string): Promise<KeyUsage> {
    return (await this.readBusiest(keyId)).usage;
  }

  /**
   * A key's stored totals with only the `customers` customers with the most requests (the key detail
   * lists no more), and every customer counted and summed in the same statement.
   */
  async readBusiest(keyId: string, customers?: number): Promise<BusiestUsage> {
    const [endpointRows, customerRows] = await Promise.all([
      this.db
        .selectFrom('usage_endpoints')
        .select(['endpoint', 'requests', 'successful', 'failed', 'total_duration_ms'])
        .where('key_id', '=', keyId)
        .execute(),
      this.db
        .selectFrom('usage_customers')
        .select((eb) => [
          'customer_id',
          'requests',
          'successful',
          'failed',
          eb.fn.countAll<number>().over().as('all_count'),
          eb.fn.sum<number>('requests').over().as('all_requests'),
          eb.fn.sum<number>('successful').over().as('all_successful'),
          eb.fn.sum<number>('failed').over().as('all_failed'),
        ])
        .where('key_id', '=', keyId)
        .$if(customers !== undefined, (q) => q.orderBy('requests', 'desc').orderBy('customer_id').limit(customers!))
        .execute(),
    ]);
    const usage = emptyKeyUsage();
    for (const r of endpointRows) {
      usage.endpoints.set(r.endpoint, {
        requests: Number(r.requests),
        successful: Number(r.successful),
        failed: Number(r.failed),
        totalDurationMs: Number(r.total_duration_ms),
      });
    }
    for (const r of customerRows) {
      const counts: UsageCounts = { requests: Number(r.requests), successful: Number(r.successful), failed: Number(r.failed) };
      usage.customers.set(r.customer_id, counts);
    }
    const first = customerRows[0];
    const allCustomers = first
      ? { count: Number(first.all_count), requests: Number(first.all_requests), successful: Number(first.all_successful), failed: Number(first.all_failed) }
      : { count: 0, ...emptyCounts() };
    return { usage, allCustomers };
  }
}
