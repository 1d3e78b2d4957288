import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../store/db.js';
import { sqlDialectOf, type SqlDialect } from '../store/sql-dialect.js';
import { upsertRows, type Upsert } from '../store/upsert-rows.js';
import { NUMBER_COLUMNS, bucketRow } from './bucket-columns.js';
import { bucketAt, GRANULARITIES, type SeriesPeriod } from './granularity.js';
import { remainder } from './undated-usage.js';
import { addCounts, emptyBucket, entryOf, minuteOf, type BucketCounts, type FiledUsage } from './usage.js';

/** One key's part of a batch filed under one consumer (null: none), its series' names already capped per period by the caller. */
export interface KeyBatch {
  readonly keyId: string;
  readonly consumerId: string | null;
  readonly usage: FiledUsage;
  readonly series: readonly SeriesPeriod[];
}

/**
 * The minutes a key's usage fell in. Requests that arrive without their minute (pushed by a replica
 * of an earlier version, or kept in an older journal) count in the minute they are applied, so the
 * buckets of a key always add up to its totals.
 */
function minutesOf(usage: FiledUsage, nowMs: number): Map<number, BucketCounts> {
  const minutes = new Map(usage.minutes);
  const timed = emptyBucket();
  for (const m of minutes.values()) addCounts(timed, m);
  const total = emptyBucket();
  for (const e of usage.endpoints.values()) addCounts(total, e);
  const rest = remainder(total, timed);
  if (rest !== undefined) {
    // A copy: the batch's own minute stays as it came, should the batch be applied again.
    const minute = emptyBucket();
    addCounts(minute, minutes.get(minuteOf(nowMs)) ?? emptyBucket());
    addCounts(minute, rest);
    minutes.set(minuteOf(nowMs), minute);
  }
  return minutes;
}

/**
 * Two latency histograms as stored (JSON objects of bin → requests) added bin by bin, in SQL: an
 * upsert merges what a batch adds into the row in the statement that adds its counts.
 */
const MERGED_LATENCY = {
  postgres: (a: RawBuilder<unknown>, b: RawBuilder<unknown>) =>
    sql`(select coalesce(jsonb_object_agg(bin, n), '{}')::text from (
      select key as bin, sum(value::bigint) as n from (select * from jsonb_each_text(${a}::jsonb) union all select * from jsonb_each_text(${b}::jsonb)) bins group by key) merged)`,
  sqlite: (a: RawBuilder<unknown>, b: RawBuilder<unknown>) =>
    sql`(select coalesce(json_group_object(bin, n), '{}') from (
      select key as bin, sum(value) as n from (select key, value from json_each(${a}) union all select key, value from json_each(${b})) group by key))`,
} satisfies Record<SqlDialect['name'], unknown>;

type BucketTable =
  'usage_buckets' | 'usage_endpoint_buckets' | 'usage_customer_buckets' | 'usage_route_buckets';

/**
 * The upsert that adds a row's counts and latency to its stored bucket: a period's row of a key and a
 * consumer, and in a series of one of its names (`nameColumn`). Table and column names are constants.
 */
function addedBucket<T extends BucketTable>(
  table: T,
  nameColumn: Upsert<T>['on'][number] | undefined,
  dialect: SqlDialect['name'],
): Upsert<T> {
  const on: Upsert<T>['on'] = [
    'key_id',
    'granularity',
    'start',
    ...(nameColumn === undefined ? [] : [nameColumn]),
    'consumer_id',
  ];
  const stored = sql.raw(`${table}.latency`);
  const added = sql.raw('excluded.latency');
  // Most batches add to a row that has no latency yet (written before sql/020) or add none.
  const latency = sql`case when ${added} = '{}' then ${stored} when ${stored} = '{}' then ${added} else ${MERGED_LATENCY[dialect](stored, added)} end`;
  return { on, add: NUMBER_COLUMNS, set: { latency } };
}

/**
 * Adds one batch to usage over time, in the caller's transaction: per key and consumer a row per
 * minute, hour, day and month it touched, and its endpoints, customers and routes for each day and
 * month they were used in.
 */
export async function addBuckets(trx: Db, keys: readonly KeyBatch[], nowMs: number): Promise<void> {
  const bucketRows = [];
  const endpointRows = [];
  const customerRows = [];
  const routeRows = [];
  for (const { keyId, consumerId, usage, series } of keys) {
    // Each row one literal: spreading a shared head into every row slowed a batch of many keys.
    const key_id = keyId;
    const consumer_id = consumerId ?? '';
    const buckets = new Map<string, { granularity: string; start: number; counts: BucketCounts }>();
    for (const [minute, counts] of minutesOf(usage, nowMs)) {
      for (const granularity of GRANULARITIES) {
        const start = bucketAt(granularity, minute).start;
        addCounts(
          entryOf(buckets, `${granularity}|${start}`, () => ({ granularity, start, counts: emptyBucket() }))
            .counts,
          counts,
        );
      }
    }
    for (const { granularity, start, counts } of buckets.values())
      bucketRows.push({ key_id, consumer_id, granularity, start: new Date(start), ...bucketRow(counts) });
    for (const { granularity, start, endpoints, customers, routes } of series) {
      for (const [endpoint, c] of endpoints)
        endpointRows.push({
          key_id,
          consumer_id,
          granularity,
          start: new Date(start),
          endpoint,
          ...bucketRow(c),
        });
      for (const [customer, c] of customers)
        customerRows.push({
          key_id,
          consumer_id,
          granularity,
          start: new Date(start),
          customer_id: customer,
          ...bucketRow(c),
        });
      for (const [route, c] of routes)
        routeRows.push({
          key_id,
          consumer_id,
          granularity,
          start: new Date(start),
          route_id: route,
          ...bucketRow(c),
        });
    }
  }
  const dialect = sqlDialectOf(trx).name;
  await upsertRows(trx, 'usage_buckets', bucketRows, addedBucket('usage_buckets', undefined, dialect));
  await upsertRows(
    trx,
    'usage_endpoint_buckets',
    endpointRows,
    addedBucket('usage_endpoint_buckets', 'endpoint', dialect),
  );
  await upsertRows(
    trx,
    'usage_customer_buckets',
    customerRows,
    addedBucket('usage_customer_buckets', 'customer_id', dialect),
  );
  await upsertRows(
    trx,
    'usage_route_buckets',
    routeRows,
    addedBucket('usage_route_buckets', 'route_id', dialect),
  );
}
