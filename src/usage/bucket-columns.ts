/** The columns every bucket table has (sql/012, 014, 020, 142) and how a bucket's counts map to them. */
import { histogramJson } from './latency-histogram.js';
import { emptyBucket, type BucketCounts } from './usage.js';

type Measure = Exclude<keyof BucketCounts, 'latency'>;

/** Each number of a bucket and its column. */
export const BUCKET_COLUMNS = {
  requests: 'requests',
  successful: 'successful',
  failed: 'failed',
  rateLimited: 'rate_limited',
  totalDurationMs: 'total_duration_ms',
  cost: 'cost',
  unsettled: 'unsettled',
  status2xx: 'status_2xx',
  status3xx: 'status_3xx',
  status4xx: 'status_4xx',
  status5xx: 'status_5xx',
  creditsExhausted: 'credits_exhausted',
  concurrencyLimited: 'concurrency_limited',
  disabled: 'disabled',
  expired: 'expired',
  routeNotAllowed: 'route_not_allowed',
  originNotAllowed: 'origin_not_allowed',
  addressNotAllowed: 'address_not_allowed',
  backendError: 'backend_error',
  backendUnreachable: 'backend_unreachable',
} as const satisfies Record<Measure, string>;
type Column = (typeof BUCKET_COLUMNS)[Measure];
/** Every number column, in BUCKET_COLUMNS' order. */
export const NUMBER_COLUMNS = Object.values(BUCKET_COLUMNS);
const MEASURES = Object.keys(BUCKET_COLUMNS) as Measure[];

/**
 * A bucket as the columns of its row, a count absent (usage of an earlier version) as 0. Written out,
 * not looped over BUCKET_COLUMNS: a batch of many keys makes hundreds of thousands of rows, and a
 * literal made them several times faster (docs/performance.md, "Usage batches of many keys"); its
 * type names every column.
 */
export function bucketRow(c: BucketCounts): Record<Column, number> & { latency: string } {
  return {
    requests: c.requests ?? 0,
    successful: c.successful ?? 0,
    failed: c.failed ?? 0,
    rate_limited: c.rateLimited ?? 0,
    total_duration_ms: c.totalDurationMs ?? 0,
    cost: c.cost ?? 0,
    unsettled: c.unsettled ?? 0,
    status_2xx: c.status2xx ?? 0,
    status_3xx: c.status3xx ?? 0,
    status_4xx: c.status4xx ?? 0,
    status_5xx: c.status5xx ?? 0,
    credits_exhausted: c.creditsExhausted ?? 0,
    concurrency_limited: c.concurrencyLimited ?? 0,
    disabled: c.disabled ?? 0,
    expired: c.expired ?? 0,
    route_not_allowed: c.routeNotAllowed ?? 0,
    origin_not_allowed: c.originNotAllowed ?? 0,
    address_not_allowed: c.addressNotAllowed ?? 0,
    backend_error: c.backendError ?? 0,
    backend_unreachable: c.backendUnreachable ?? 0,
    latency: histogramJson(c.latency),
  };
}

/** Summed rows back as a bucket, its latency empty: the reader adds the bins it sums apart. */
export function bucketOf(row: Readonly<Record<string, unknown>>): BucketCounts {
  const bucket = emptyBucket();
  for (const m of MEASURES) bucket[m] = Number(row[BUCKET_COLUMNS[m]] ?? 0);
  // Kept once there is one (usage.ts), as every other reader of counts keeps it.
  if (bucket.unsettled === 0) delete bucket.unsettled;
  return bucket;
}
