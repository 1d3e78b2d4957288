import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { addBuckets, type KeyBatch } from './bucket-repository.js';
import {
  MAX_CUSTOMERS_PER_KEY,
  MAX_ENDPOINTS_PER_KEY,
  OTHER_ENDPOINT,
  addCounts,
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
/** A batch is retried within seconds of its first apply; a day of ids is far more than enough. */
const BATCH_ID_RETENTION = '1 day';
const PRUNE_INTERVAL_MS = 3_600_000;

/** Usage totals in Postgres: batches add to them, the key detail reads them. */
export class UsageRepository {
  private lastPrune = 0;

  constructor(private readonly db: Db) {}

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
            .where('applied_at', '<', sql<Date>`now() - ${BATCH_ID_RETENTION}::interval`)
            .execute();
        }
      }
      const keyIds = [...batch.keys()];
      if (keyIds.length === 0) return true;
      // FOR KEY SHARE: a concurrent delete waits for this batch, then removes its rows too.
      const live = await trx.selectFrom('api_keys').select('id').where('id', 'in', keyIds).forKeyShare().execute();
      const [endpointsHeld, customersHeld] = await Promise.all([
        this.distinctCounts(trx, 'usage_endpoints', 'endpoint', keyIds),
        this.distinctCounts(trx, 'usage_customers', 'customer_id', keyIds),
      ]);

      const endpointRows: { key_id: string; endpoint: string; requests: number; successful: number; failed: number; total_duration_ms: number }[] = [];
      const customerRows: { key_id: string; customer_id: string; requests: number; successful: number; failed: number }[] = [];
      const overTime: KeyBatch[] = [];
      for (const { id } of live) {
        const usage = batch.get(id)!;
        const endpoints = await this.capped(trx, 'usage_endpoints', 'endpoint', id, usage.endpoints, endpointsHeld.get(id) ?? 0, MAX_ENDPOINTS_PER_KEY, emptyEndpoint);
        for (const [endpoint, u] of endpoints) {
          endpointRows.push({ key_id: id, endpoint, requests: u.requests, successful: u.successful, failed: u.failed, total_duration_ms: u.totalDurationMs });
        }
        const customers = await this.capped(trx, 'usage_customers', 'customer_id', id, usage.customers, customersHeld.get(id) ?? 0, MAX_CUSTOMERS_PER_KEY, emptyCounts);
        for (const [customer, u] of customers) {
          customerRows.push({ key_id: id, customer_id: customer, requests: u.requests, successful: u.successful, failed: u.failed });
        }
        overTime.push({ keyId: id, usage, endpoints, customers });
      }
      await addBuckets(trx, overTime, Date.now());
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

  /** Distinct names (other than "(other)") each key already holds in `table`. */
  private async distinctCounts(trx: Db, table: 'usage_endpoints' | 'usage_customers', column: 'endpoint' | 'customer_id', keyIds: readonly string[]): Promise<Map<string, number>> {
    const rows = await trx
      .selectFrom(table)
      .select(['key_id', sql<number>`count(*)::int`.as('n')])
      .where('key_id', 'in', keyIds)
      .where(column, '<>', OTHER_ENDPOINT)
      .groupBy('key_id')
      .execute();
    return new Map(rows.map((r) => [r.key_id, Number(r.n)]));
  }

  /**
   * Names beyond a key's cap (paths, customers) fold into "(other)", counting the names it already
   * holds; only keys near the cap cost a query, for which of the batch's names are stored already.
   */
  private async capped<T extends UsageCounts>(
    trx: Db,
    table: 'usage_endpoints' | 'usage_customers',
    column: 'endpoint' | 'customer_id',
    keyId: string,
    names: Map<string, T>,
    held: number,
    max: number,
    create: () => T,
  ): Promise<Map<string, T>> {
    if (held + names.size <= max) return names;
    const existing = await trx
      .selectFrom(table)
      .select(sql<string>`${sql.ref(column)}`.as('name'))
      .where('key_id', '=', keyId)
      .where(column, 'in', [...names.keys()])
      .execute();
    const capped = new Map<string, T>();
    for (const row of existing) capped.set(row.name, create());
    let count = held;
    for (const [name, u] of names) {
      const newName = !capped.has(name) && name !== OTHER_ENDPOINT;
      addCounts(entryFor(capped, name, max, create, newName ? count : 0), u);
      if (newName && count < max) count++;
    }
    return capped;
  }

  /** Which of these batches Postgres has applied. */
  async appliedBatches(batchIds: readonly string[]): Promise<Set<string>> {
    if (batchIds.length === 0) return new Set();
    const rows = await this.db.selectFrom('usage_batches').select('batch_id').where('batch_id', 'in', batchIds).execute();
    return new Set(rows.map((r) => r.batch_id));
  }

  async read(keyId: string): Promise<KeyUsage> {
    const [endpoints, customers] = await Promise.all([
      this.db
        .selectFrom('usage_endpoints')
        .select(['endpoint', 'requests', 'successful', 'failed', 'total_duration_ms'])
        .where('key_id', '=', keyId)
        .execute(),
      this.db
        .selectFrom('usage_customers')
        .select(['customer_id', 'requests', 'successful', 'failed'])
        .where('key_id', '=', keyId)
        .execute(),
    ]);
    const usage = emptyKeyUsage();
    for (const r of endpoints) {
      usage.endpoints.set(r.endpoint, {
        requests: Number(r.requests),
        successful: Number(r.successful),
        failed: Number(r.failed),
        totalDurationMs: Number(r.total_duration_ms),
      });
    }
    for (const r of customers) {
      const counts: UsageCounts = { requests: Number(r.requests), successful: Number(r.successful), failed: Number(r.failed) };
      usage.customers.set(r.customer_id, counts);
    }
    return usage;
  }
}
