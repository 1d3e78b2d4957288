/** The granularities of usage over time and their UTC-aligned buckets (docs/guides/usage-and-billing.md). */
import { windowAt } from '../plans/window.js';
import { undatedUsage } from './undated-usage.js';
import {
  addCounts,
  dayOf,
  emptyBucket,
  entryOf,
  type BucketCounts,
  type DayUsage,
  type FiledUsage,
} from './usage.js';

export const GRANULARITIES = ['minute', 'hour', 'day', 'month'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** The bucket of `granularity` that holds the instant `atMs`: [start, end) in epoch ms. */
export function bucketAt(granularity: Granularity, atMs: number): { start: number; end: number } {
  return windowAt(granularity, atMs);
}

/** Starts of every bucket from the one holding `fromMs` up to (not including) `toMs`, oldest first. */
export function bucketStarts(granularity: Granularity, fromMs: number, toMs: number): number[] {
  const starts: number[] = [];
  for (let at = bucketAt(granularity, fromMs).start; at < toMs; at = bucketAt(granularity, at).end)
    starts.push(at);
  return starts;
}

/** How many buckets the range holds, without listing them (a huge range is refused before). */
export function bucketCount(granularity: Granularity, fromMs: number, toMs: number): number {
  if (toMs <= fromMs) return 0;
  if (granularity !== 'month') {
    const length = bucketAt(granularity, 0).end;
    return Math.ceil((toMs - bucketAt(granularity, fromMs).start) / length);
  }
  const from = new Date(fromMs);
  const to = new Date(toMs - 1);
  return (to.getUTCFullYear() - from.getUTCFullYear()) * 12 + to.getUTCMonth() - from.getUTCMonth() + 1;
}

/** One day or month of a key's series: its endpoints, customers and routes, by name. */
export interface SeriesPeriod {
  readonly granularity: 'day' | 'month';
  readonly start: number;
  readonly endpoints: Map<string, BucketCounts>;
  readonly customers: Map<string, BucketCounts>;
  readonly routes: Map<string, BucketCounts>;
}

/**
 * The days and months of a key's endpoint, customer and route series, each with its own names
 * (capped later, per period): every day the usage carries, and what it does not date (an earlier
 * version's, which has no route either) on the day of `nowMs`, like the minutes.
 */
export function seriesPeriods(usage: FiledUsage, nowMs: number): SeriesPeriod[] {
  const periods = new Map<string, SeriesPeriod>();
  const add = (day: number, counts: DayUsage) => {
    for (const granularity of ['day', 'month'] as const) {
      const start = bucketAt(granularity, day).start;
      const period = entryOf(periods, `${granularity}|${start}`, () => ({
        granularity,
        start,
        endpoints: new Map(),
        customers: new Map(),
        routes: new Map(),
      }));
      for (const [endpoint, c] of counts.endpoints)
        addCounts(entryOf(period.endpoints, endpoint, emptyBucket), c);
      for (const [customer, c] of counts.customers)
        addCounts(entryOf(period.customers, customer, emptyBucket), c);
      for (const [route, c] of counts.routes) addCounts(entryOf(period.routes, route, emptyBucket), c);
    }
  };
  for (const [day, counts] of usage.days) add(day, counts);
  const undated = undatedUsage(usage);
  if (undated.endpoints.size + undated.customers.size > 0) add(dayOf(nowMs), undated);
  return [...periods.values()];
}
