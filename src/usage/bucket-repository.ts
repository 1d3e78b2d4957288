import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { bucketAt, GRANULARITIES } from './granularity.js';
import { addCounts, emptyBucket, minuteOf, type BucketCounts, type EndpointUsage, type KeyUsage, type UsageCounts } from './usage.js';

/** Rows per INSERT: 9 parameters each stays far below Postgres' 65,535-parameter cap. */
const CHUNK = 1000;

/** One key's part of a batch, its endpoint and customer names already capped by the caller. */
export interface KeyBatch {
  readonly keyId: string;
  readonly usage: KeyUsage;
  readonly endpoints: ReadonlyMap<string, EndpointUsage>;
  readonly customers: ReadonlyMap<string, UsageCounts>;
}

/**
 * The minutes a key's usage fell in. Requests that arrive without their minute (pushed by a replica
 * of an earlier version, or kept in an older journal) count in the minute they are applied, so the
 * buckets of a key always add up to its totals.
 */
function minutesOf(usage: KeyUsage, nowMs: number): Map<number, BucketCounts> {
  const minutes = new Map(usage.minutes);
  const timed = emptyBucket();
  for (const m of minutes.values()) addCounts(timed, m);
  const total = emptyBucket();
  for (const e of usage.endpoints.values()) addCounts(total, e);
  if (total.requests > timed.requests) {
    const rest = { ...emptyBucket(), requests: total.requests - timed.requests, successful: total.successful - timed.successful, failed: total.failed - timed.failed, totalDurationMs: total.totalDurationMs - timed.totalDurationMs };
    const minute = minuteOf(nowMs);
    minutes.set(minute, { ...(minutes.get(minute) ?? emptyBucket()), ...rest });
  }
  return minutes;
}

/** `table.column + excluded.column`: an upsert adds the batch's counts to the bucket's (names are constants). */
const add = (table: string, column: string) => sql<number>`${sql.raw(table)}.${sql.raw(column)} + excluded.${sql.raw(column)}`;

/**
 * Adds one batch to usage over time, in the caller's transaction: per key a row per minute, hour, day
 * and month it touched, and its endpoints and customers by day and month. A batch is cut every second,
 * so its endpoints and customers take the day (and month) of its first minute: only a batch held back
 * across midnight UTC by an outage puts some of one day's endpoint counts into the next.
 */
export async function addBuckets(trx: Db, keys: readonly KeyBatch[], nowMs: number): Promise<void> {
  const bucketRows = [];
  const endpointRows = [];
  const customerRows = [];
  for (const { keyId, usage, endpoints, customers } of keys) {
    const minutes = minutesOf(usage, nowMs);
    const buckets = new Map<string, { granularity: string; start: number; counts: BucketCounts }>();
    for (const [minute, counts] of minutes) {
      for (const granularity of GRANULARITIES) {
        const start = bucketAt(granularity, minute).start;
        const id = `${granularity}|${start}`;
        let bucket = buckets.get(id);
        if (!bucket) buckets.set(id, (bucket = { granularity, start, counts: emptyBucket() }));
        addCounts(bucket.counts, counts);
      }
    }
    for (const { granularity, start, counts: c } of buckets.values()) {
      bucketRows.push({ key_id: keyId, granularity, start: new Date(start), requests: c.requests, successful: c.successful, failed: c.failed, rate_limited: c.rateLimited, total_duration_ms: c.totalDurationMs });
    }
    const first = Math.min(...minutes.keys());
    for (const granularity of ['day', 'month'] as const) {
      const start = new Date(bucketAt(granularity, first).start);
      for (const [endpoint, e] of endpoints) {
        endpointRows.push({ key_id: keyId, granularity, start, endpoint, requests: e.requests, successful: e.successful, failed: e.failed, total_duration_ms: e.totalDurationMs });
      }
      for (const [customer, c] of customers) {
        customerRows.push({ key_id: keyId, granularity, start, customer_id: customer, requests: c.requests, successful: c.successful, failed: c.failed });
      }
    }
  }
  for (let i = 0; i < bucketRows.length; i += CHUNK) {
    await trx
      .insertInto('usage_buckets')
      .values(bucketRows.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc.columns(['key_id', 'granularity', 'start']).doUpdateSet({
          requests: add('usage_buckets', 'requests'),
          successful: add('usage_buckets', 'successful'),
          failed: add('usage_buckets', 'failed'),
          rate_limited: add('usage_buckets', 'rate_limited'),
          total_duration_ms: add('usage_buckets', 'total_duration_ms'),
        }),
      )
      .execute();
  }
  for (let i = 0; i < endpointRows.length; i += CHUNK) {
    await trx
      .insertInto('usage_endpoint_buckets')
      .values(endpointRows.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc.columns(['key_id', 'granularity', 'start', 'endpoint']).doUpdateSet({
          requests: add('usage_endpoint_buckets', 'requests'),
          successful: add('usage_endpoint_buckets', 'successful'),
          failed: add('usage_endpoint_buckets', 'failed'),
          total_duration_ms: add('usage_endpoint_buckets', 'total_duration_ms'),
        }),
      )
      .execute();
  }
  for (let i = 0; i < customerRows.length; i += CHUNK) {
    await trx
      .insertInto('usage_customer_buckets')
      .values(customerRows.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc.columns(['key_id', 'granularity', 'start', 'customer_id']).doUpdateSet({
          requests: add('usage_customer_buckets', 'requests'),
          successful: add('usage_customer_buckets', 'successful'),
          failed: add('usage_customer_buckets', 'failed'),
        }),
      )
      .execute();
  }
}
