import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { bucketAt, GRANULARITIES, type SeriesPeriod } from './granularity.js';
import { addCounts, emptyBucket, entryOf, minuteOf, type BucketCounts, type KeyUsage } from './usage.js';

/** Rows per INSERT: 10 parameters each stays far below Postgres' 65,535-parameter cap (SQLite: 32,766). */
const CHUNK = 1000;

/** One key's part of a batch, its series' names already capped per period by the caller. */
export interface KeyBatch {
  readonly keyId: string;
  readonly usage: KeyUsage;
  readonly series: readonly SeriesPeriod[];
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
    // A copy: the batch's own minute stays as it came, should the batch be applied again.
    const minute = { ...(minutes.get(minuteOf(nowMs)) ?? emptyBucket()) };
    addCounts(minute, rest);
    minutes.set(minuteOf(nowMs), minute);
  }
  return minutes;
}

/** `table.column + excluded.column`: an upsert adds the batch's counts to the bucket's (names are constants). */
const add = (table: string, column: string) => sql<number>`${sql.raw(table)}.${sql.raw(column)} + excluded.${sql.raw(column)}`;

/** The counts of a bucket row, with the columns every bucket table has. */
const countColumns = (c: BucketCounts) => ({ requests: c.requests, successful: c.successful, failed: c.failed, rate_limited: c.rateLimited, total_duration_ms: c.totalDurationMs });

/** The upsert that adds a row's counts to the stored bucket's. */
const addedCounts = (table: string) => ({
  requests: add(table, 'requests'),
  successful: add(table, 'successful'),
  failed: add(table, 'failed'),
  rate_limited: add(table, 'rate_limited'),
  total_duration_ms: add(table, 'total_duration_ms'),
});

/**
 * Adds one batch to usage over time, in the caller's transaction: per key a row per minute, hour, day
 * and month it touched, and its endpoints and customers for each day and month they were used in.
 */
export async function addBuckets(trx: Db, keys: readonly KeyBatch[], nowMs: number): Promise<void> {
  const bucketRows = [];
  const endpointRows = [];
  const customerRows = [];
  for (const { keyId, usage, series } of keys) {
    const buckets = new Map<string, { granularity: string; start: number; counts: BucketCounts }>();
    for (const [minute, counts] of minutesOf(usage, nowMs)) {
      for (const granularity of GRANULARITIES) {
        const start = bucketAt(granularity, minute).start;
        addCounts(entryOf(buckets, `${granularity}|${start}`, () => ({ granularity, start, counts: emptyBucket() })).counts, counts);
      }
    }
    for (const { granularity, start, counts } of buckets.values()) bucketRows.push({ key_id: keyId, granularity, start: new Date(start), ...countColumns(counts) });
    for (const { granularity, start, endpoints, customers } of series) {
      for (const [endpoint, c] of endpoints) endpointRows.push({ key_id: keyId, granularity, start: new Date(start), endpoint, ...countColumns(c) });
      for (const [customer, c] of customers) customerRows.push({ key_id: keyId, granularity, start: new Date(start), customer_id: customer, ...countColumns(c) });
    }
  }
  for (let i = 0; i < bucketRows.length; i += CHUNK) {
    await trx
      .insertInto('usage_buckets')
      .values(bucketRows.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns(['key_id', 'granularity', 'start']).doUpdateSet(addedCounts('usage_buckets')))
      .execute();
  }
  for (let i = 0; i < endpointRows.length; i += CHUNK) {
    await trx
      .insertInto('usage_endpoint_buckets')
      .values(endpointRows.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns(['key_id', 'granularity', 'start', 'endpoint']).doUpdateSet(addedCounts('usage_endpoint_buckets')))
      .execute();
  }
  for (let i = 0; i < customerRows.length; i += CHUNK) {
    await trx
      .insertInto('usage_customer_buckets')
      .values(customerRows.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns(['key_id', 'granularity', 'start', 'customer_id']).doUpdateSet(addedCounts('usage_customer_buckets')))
      .execute();
  }
}
