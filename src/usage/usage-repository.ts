import type { Db } from '../store/db.js';
import { sqlDialectOf, type SqlDialect } from '../store/sql-dialect.js';
import { upsertRows } from '../store/upsert-rows.js';
import { addBuckets, type KeyBatch } from './bucket-repository.js';
import { addFailures } from './failure-log-repository.js';
import { filingsOf } from './filings.js';
import { seriesPeriods, type SeriesPeriod } from './granularity.js';
import { NAMES, heldCounts, naming, renamed, type Naming } from './name-cap-repository.js';
import {
  emptyBucket,
  emptyCounts,
  emptyEndpoint,
  emptyFiledUsage,
  type FiledUsage,
  type UsageBatch,
  type UsageCounts,
} from './usage.js';

const PRUNE_INTERVAL_MS = 3_600_000;

/** A batch is retried within seconds of its first apply; a day of ids is far more than enough. */
const BATCH_IDS_KEPT_MS = 86_400_000;

/** A key's stored totals with only its busiest customers, and all its customers counted and summed. */
export interface BusiestUsage {
  readonly usage: FiledUsage;
  readonly allCustomers: UsageCounts & { count: number };
}

/** Whose usage a read sums: a key's (under every consumer it was filed under) or a consumer's (of every key). */
export type TotalsScope = { readonly keyId: string } | { readonly consumerId: string };

/** The rows of a scope: a key's, or a consumer's. */
const inScope = (scope: TotalsScope) =>
  'keyId' in scope ? (['key_id', scope.keyId] as const) : (['consumer_id', scope.consumerId] as const);

/** Usage totals in Postgres: batches add to them, the key detail reads them. */
export class UsageRepository {
  private lastPrune = 0;
  private readonly dialect: SqlDialect;

  constructor(
    private readonly db: Db,
    /** When a batch is applied: the minute and day of usage that arrives without them. */
    private readonly clock: () => number = Date.now,
  ) {
    this.dialect = sqlDialectOf(db);
  }

  /**
   * Adds a batch to the totals in one transaction. With a `batchId`, a batch already applied is
   * skipped (returns false), so a flusher that died after committing can safely apply it again.
   * Usage of a key deleted meanwhile is kept like any other: it was made while the key existed, and
   * bills its consumer (sql/072).
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
            .where('applied_at', '<', this.dialect.ago(BATCH_IDS_KEPT_MS))
            .execute();
        }
      }
      const keyIds = [...batch.keys()];
      if (keyIds.length === 0) return true;
      const nowMs = this.clock();
      const filings = new Map(
        keyIds.map((id) => [
          id,
          filingsOf(batch.get(id)!).map((filing) => ({
            ...filing,
            series: seriesPeriods(filing.usage, nowMs),
          })),
        ]),
      );
      const starts = [
        ...new Set(
          [...filings.values()].flatMap((parts) => parts.flatMap((f) => f.series.map((p) => p.start))),
        ),
      ];
      const [endpointsHeld, customersHeld, endpointSeriesHeld, customerSeriesHeld, routeSeriesHeld] =
        await Promise.all([
          heldCounts(trx, NAMES.endpoints, keyIds),
          heldCounts(trx, NAMES.customers, keyIds),
          heldCounts(trx, NAMES.endpointSeries, keyIds, starts),
          heldCounts(trx, NAMES.customerSeries, keyIds, starts),
          heldCounts(trx, NAMES.routeSeries, keyIds, starts),
        ]);

      const endpointRows: {
        key_id: string;
        consumer_id: string;
        endpoint: string;
        requests: number;
        successful: number;
        failed: number;
        total_duration_ms: number;
        cost: number;
        unsettled: number;
      }[] = [];
      const customerRows: {
        key_id: string;
        consumer_id: string;
        customer_id: string;
        requests: number;
        successful: number;
        failed: number;
      }[] = [];
      const overTime: KeyBatch[] = [];
      for (const id of keyIds) {
        const parts = filings.get(id)!;
        // A key's names are capped across all its consumers: every part uses the names the key counts.
        const endpointNames = await naming(
          trx,
          NAMES.endpoints,
          { keyId: id },
          parts.flatMap((f) => [...f.usage.endpoints.keys()]),
          endpointsHeld,
        );
        const customerNames = await naming(
          trx,
          NAMES.customers,
          { keyId: id },
          parts.flatMap((f) => [...f.usage.customers.keys()]),
          customersHeld,
        );
        const periodNames = new Map<string, { endpoints: Naming; customers: Naming; routes: Naming }>();
        for (const period of new Map(
          parts.flatMap((f) => f.series.map((p) => [`${p.granularity}|${p.start}`, p] as const)),
        ).values()) {
          const scope = { keyId: id, period };
          const inPeriod = parts.flatMap((f) =>
            f.series.filter((p) => p.granularity === period.granularity && p.start === period.start),
          );
          periodNames.set(`${period.granularity}|${period.start}`, {
            endpoints: await naming(
              trx,
              NAMES.endpointSeries,
              scope,
              inPeriod.flatMap((p) => [...p.endpoints.keys()]),
              endpointSeriesHeld,
            ),
            customers: await naming(
              trx,
              NAMES.customerSeries,
              scope,
              inPeriod.flatMap((p) => [...p.customers.keys()]),
              customerSeriesHeld,
            ),
            routes: await naming(
              trx,
              NAMES.routeSeries,
              scope,
              inPeriod.flatMap((p) => [...p.routes.keys()]),
              routeSeriesHeld,
            ),
          });
        }
        for (const { consumerId, usage, series } of parts) {
          const filed = { key_id: id, consumer_id: consumerId ?? '' };
          for (const [endpoint, u] of renamed(usage.endpoints, endpointNames, emptyEndpoint)) {
            endpointRows.push({
              ...filed,
              endpoint,
              requests: u.requests,
              successful: u.successful,
              failed: u.failed,
              total_duration_ms: u.totalDurationMs,
              cost: u.cost,
              unsettled: u.unsettled ?? 0,
            });
          }
          for (const [customer, u] of renamed(usage.customers, customerNames, emptyCounts)) {
            customerRows.push({
              ...filed,
              customer_id: customer,
              requests: u.requests,
              successful: u.successful,
              failed: u.failed,
            });
          }
          const periods: SeriesPeriod[] = series.map((period) => {
            const names = periodNames.get(`${period.granularity}|${period.start}`)!;
            return {
              ...period,
              endpoints: renamed(period.endpoints, names.endpoints, emptyBucket),
              customers: renamed(period.customers, names.customers, emptyBucket),
              routes: renamed(period.routes, names.routes, emptyBucket),
            };
          });
          overTime.push({ keyId: id, consumerId, usage, series: periods });
        }
      }
      await addBuckets(trx, overTime, nowMs);
      await addFailures(trx, batch);
      await upsertRows(trx, 'usage_endpoints', endpointRows, {
        on: ['key_id', 'endpoint', 'consumer_id'],
        add: ['requests', 'successful', 'failed', 'total_duration_ms', 'cost', 'unsettled'],
      });
      await upsertRows(trx, 'usage_customers', customerRows, {
        on: ['key_id', 'customer_id', 'consumer_id'],
        add: ['requests', 'successful', 'failed'],
      });
      return true;
    });
  }

  /** Which of these batches Postgres has applied. */
  async appliedBatches(batchIds: readonly string[]): Promise<Set<string>> {
    if (batchIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('usage_batches')
      .select('batch_id')
      .where('batch_id', 'in', batchIds)
      .execute();
    return new Set(rows.map((r) => r.batch_id));
  }

  /**
   * `read` and, in the same snapshot (repeatable read), which of `batchIds` are applied: a batch is in
   * what `read` returns exactly when it is among those returned, however flushes interleave.
   */
  async inSnapshot<T>(
    batchIds: readonly string[],
    read: (snapshot: Db) => Promise<T>,
  ): Promise<{ readonly stored: T; readonly applied: Set<string> }> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => ({
        stored: await read(trx),
        applied: await new UsageRepository(trx).appliedBatches(batchIds),
      }));
  }

  /** A key's stored totals, summed over the consumers they were filed under. */
  async read(keyId: string): Promise<FiledUsage> {
    return (await this.readBusiest({ keyId })).usage;
  }

  /**
   * The stored totals of a key (summed over its consumers) or of a consumer (summed over its keys)
   * with only the `customers` customers with the most requests (a detail lists no more), and every
   * customer counted and summed in the same statement.
   */
  async readBusiest(scope: TotalsScope, customers?: number): Promise<BusiestUsage> {
    const [column, id] = inScope(scope);
    const [endpointRows, customerRows] = await Promise.all([
      this.db
        .selectFrom('usage_endpoints')
        .select((eb) => [
          'endpoint',
          eb.fn.sum<number>('requests').as('requests'),
          eb.fn.sum<number>('successful').as('successful'),
          eb.fn.sum<number>('failed').as('failed'),
          eb.fn.sum<number>('total_duration_ms').as('total_duration_ms'),
          eb.fn.sum<number>('cost').as('cost'),
          eb.fn.sum<number>('unsettled').as('unsettled'),
        ])
        .where(column, '=', id)
        .groupBy('endpoint')
        .execute(),
      this.db
        .selectFrom((db) =>
          db
            .selectFrom('usage_customers')
            .select((eb) => [
              'customer_id',
              eb.fn.sum<number>('requests').as('requests'),
              eb.fn.sum<number>('successful').as('successful'),
              eb.fn.sum<number>('failed').as('failed'),
            ])
            .where(column, '=', id)
            .groupBy('customer_id')
            .as('c'),
        )
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
        .$if(customers !== undefined, (q) =>
          q.orderBy('requests', 'desc').orderBy('customer_id').limit(customers!),
        )
        .execute(),
    ]);
    const usage = emptyFiledUsage();
    for (const r of endpointRows) {
      usage.endpoints.set(r.endpoint, {
        requests: Number(r.requests),
        successful: Number(r.successful),
        failed: Number(r.failed),
        totalDurationMs: Number(r.total_duration_ms),
        cost: Number(r.cost),
        ...(Number(r.unsettled) > 0 && { unsettled: Number(r.unsettled) }),
      });
    }
    for (const r of customerRows) {
      const counts: UsageCounts = {
        requests: Number(r.requests),
        successful: Number(r.successful),
        failed: Number(r.failed),
      };
      usage.customers.set(r.customer_id, counts);
    }
    const first = customerRows[0];
    const allCustomers = first
      ? {
          count: Number(first.all_count),
          requests: Number(first.all_requests),
          successful: Number(first.all_successful),
          failed: Number(first.all_failed),
        }
      : { count: 0, ...emptyCounts() };
    return { usage, allCustomers };
  }
}
