/** Usage over time as the API shows it (docs/guides/usage-and-billing.md): zero-filled buckets, stored plus pending. */
import { bucketAt, bucketStarts, seriesPeriods, type Granularity } from './granularity.js';
import {
  UsageHistoryRepository,
  type Buckets,
  type HistoryScope,
  type SeriesBy,
  type TopConsumer,
  type TopKey,
} from './history-repository.js';
import { mergeHistogram, percentile, type LatencyHistogram } from './latency-histogram.js';
import type { UsageReader } from './reader.js';
import {
  MAX_CUSTOMERS_PER_KEY,
  MAX_ENDPOINTS_PER_KEY,
  MAX_ROUTES_PER_KEY,
  OTHER_ENDPOINT,
  OUTCOMES,
  addCounts,
  countedName,
  emptyBucket,
  entryOf,
  type BucketCounts,
  type FiledUsage,
  type KeyUsage,
  type Outcome,
} from './usage.js';

export interface BucketView {
  start: number;
  requests: number;
  successful: number;
  failed: number;
  rateLimited: number;
  averageResponseTimeMs: number;
  /** Units charged. */
  cost: number;
  /** Requests whose response reported no units readable: each charged its reservation. */
  unsettled: number;
  /** What the clients got; they add up to `requests`. */
  statusClasses: { '2xx': number; '3xx': number; '4xx': number; '5xx': number };
  /** Why requests failed; `rateLimited` as above. */
  outcomes: Record<Outcome, number>;
  /** Null in an empty bucket. */
  latencyMs: Percentiles;
}

/** Response-time percentiles, within 5 % (decision record 0026); null when there was no request. */
export interface Percentiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

/** A range's buckets, and its percentiles over all its requests (a bucket's do not add up to them). */
export interface RangeView {
  buckets: BucketView[];
  latencyMs: Percentiles;
}

export interface SeriesView {
  name: string;
  buckets: BucketView[];
}

/**
 * Whose usage over time: a key's (with `consumerId`, only while it belonged to that consumer), or a
 * consumer's and the keys whose pending usage may hold some of it.
 */
type Scope =
  | { readonly keyId: string; readonly consumerId?: string }
  | { readonly consumerId: string; readonly keyIds: readonly string[] };

const average = (c: BucketCounts) =>
  c.requests === 0 ? 0 : Math.round((c.totalDurationMs / c.requests) * 100) / 100;

const percentilesOf = (latency: LatencyHistogram): Percentiles => ({
  p50: percentile(latency, 50),
  p95: percentile(latency, 95),
  p99: percentile(latency, 99),
});

export function bucketView(start: number, c: BucketCounts): BucketView {
  return {
    start,
    requests: c.requests,
    successful: c.successful,
    failed: c.failed,
    rateLimited: c.rateLimited,
    averageResponseTimeMs: average(c),
    cost: c.cost,
    unsettled: c.unsettled ?? 0,
    statusClasses: { '2xx': c.status2xx, '3xx': c.status3xx, '4xx': c.status4xx, '5xx': c.status5xx },
    outcomes: Object.fromEntries(OUTCOMES.map((o) => [o, c[o]])) as Record<Outcome, number>,
    latencyMs: percentilesOf(c.latency),
  };
}

/** Every bucket start of the range, oldest first, with what `buckets` holds for it or zeros. */
function zeroFilled(starts: readonly number[], buckets: Buckets): BucketView[] {
  return starts.map((start) => bucketView(start, buckets.get(start) ?? emptyBucket()));
}

/** The range's buckets, and its percentiles from their histograms added up. */
function rangeView(starts: readonly number[], buckets: Buckets): RangeView {
  const latency: LatencyHistogram = new Map();
  for (const start of starts) {
    const counts = buckets.get(start);
    if (counts) mergeHistogram(latency, counts.latency);
  }
  return { buckets: zeroFilled(starts, buckets), latencyMs: percentilesOf(latency) };
}

function addTo(buckets: Buckets, start: number, counts: BucketCounts): void {
  addCounts(entryOf(buckets, start, emptyBucket), counts);
}

/** Each series' names in a period of pending usage, and how many a key's period holds. */
const PENDING_NAMES = {
  endpoint: ['endpoints', MAX_ENDPOINTS_PER_KEY],
  customer: ['customers', MAX_CUSTOMERS_PER_KEY],
  route: ['routes', MAX_ROUTES_PER_KEY],
} as const satisfies Record<SeriesBy, readonly [string, number]>;

/** Every name's series zero-filled over the range, most requests first (then by name). */
function sortedSeries(series: Map<string, Buckets>, starts: readonly number[]): SeriesView[] {
  const total = (b: Buckets) => [...b.values()].reduce((n, c) => n + c.requests, 0);
  return [...series]
    .sort(([a, x], [b, y]) => total(y) - total(x) || (a < b ? -1 : 1))
    .map(([name, buckets]) => ({ name, buckets: zeroFilled(starts, buckets) }));
}

const historyScope = (scope: Scope): HistoryScope =>
  'keyId' in scope ? scope : { consumerId: scope.consumerId };

export class UsageHistory {
  constructor(
    private readonly repository: UsageHistoryRepository,
    /** For what is recorded and not yet stored, so a request shows within 2 s like in the detail. */
    private readonly reader: Pick<UsageReader, 'snapshot'>,
  ) {}

  /**
   * A key's buckets over [fromMs, toMs); `fromMs` and `toMs` are bucket boundaries. With `consumerId`,
   * only what it did while it belonged to that consumer.
   */
  forKey(
    keyId: string,
    granularity: Granularity,
    fromMs: number,
    toMs: number,
    consumerId?: string,
  ): Promise<RangeView> {
    return this.buckets(keyScope(keyId, consumerId), granularity, fromMs, toMs);
  }

  /**
   * A consumer's buckets: what its keys did while they belonged to it. `keyIds`: its keys now, whose
   * pending usage counts (a key moved away within the last second or two shows once stored).
   */
  forConsumer(
    consumerId: string,
    keyIds: readonly string[],
    granularity: Granularity,
    fromMs: number,
    toMs: number,
  ): Promise<RangeView> {
    return this.buckets({ consumerId, keyIds }, granularity, fromMs, toMs);
  }

  /** How many series `seriesForKey`, `seriesForConsumer` or `seriesForFleet` answers, close enough to bound its size (what is stored; pending usage adds few). */
  seriesCount(
    scope: HistoryScope,
    by: SeriesBy,
    granularity: 'day' | 'month',
    fromMs: number,
    toMs: number,
  ): Promise<number> {
    return this.repository.seriesCount(scope, by, granularity, fromMs, toMs);
  }

  /**
   * A key's usage by endpoint, customer or route, one zero-filled series per name, most requests first.
   * Pending usage counts in the day and month it happened in, under the name the store will give it:
   * its own, or "(other)" once the period holds as many names as its cap. `consumerId` as `forKey`.
   */
  seriesForKey(
    keyId: string,
    by: SeriesBy,
    granularity: 'day' | 'month',
    fromMs: number,
    toMs: number,
    nowMs: number,
    consumerId?: string,
  ): Promise<SeriesView[]> {
    return this.series(keyScope(keyId, consumerId), by, granularity, fromMs, toMs, nowMs);
  }

  /** A consumer's usage by endpoint, customer or route, as `seriesForKey`; `keyIds` as `forConsumer`. */
  seriesForConsumer(
    consumerId: string,
    keyIds: readonly string[],
    by: SeriesBy,
    granularity: 'day' | 'month',
    fromMs: number,
    toMs: number,
    nowMs: number,
  ): Promise<SeriesView[]> {
    return this.series({ consumerId, keyIds }, by, granularity, fromMs, toMs, nowMs);
  }

  /** Every key's buckets summed, and the busiest keys of the range (stored usage: a second behind). */
  async forFleet(
    granularity: Granularity,
    fromMs: number,
    toMs: number,
  ): Promise<RangeView & { topKeys: TopKey[] }> {
    const [buckets, topKeys] = await Promise.all([
      this.repository.buckets('fleet', granularity, fromMs, toMs),
      this.repository.topKeys(granularity, fromMs, toMs, 10),
    ]);
    return { ...rangeView(bucketStarts(granularity, fromMs, toMs), buckets), topKeys };
  }

  /** Every key's usage by route, summed, one zero-filled series per route (stored usage: a second behind). */
  async seriesForFleet(
    by: 'route',
    granularity: 'day' | 'month',
    fromMs: number,
    toMs: number,
  ): Promise<SeriesView[]> {
    const series = await this.repository.series('fleet', by, granularity, fromMs, toMs);
    return sortedSeries(series, bucketStarts(granularity, fromMs, toMs));
  }

  /** The consumers with the most requests filed under them in the range (stored usage: a second behind). */
  topConsumers(granularity: Granularity, fromMs: number, toMs: number, limit = 10): Promise<TopConsumer[]> {
    return this.repository.topConsumers(granularity, fromMs, toMs, limit);
  }

  /** The stored buckets and the pending usage of a scope, in one snapshot (UsageReader.snapshot). */
  private async buckets(
    scope: Scope,
    granularity: Granularity,
    fromMs: number,
    toMs: number,
  ): Promise<RangeView> {
    const { stored, pending } = await this.reader.snapshot(pendingKeys(scope), (db) =>
      new UsageHistoryRepository(db).buckets(historyScope(scope), granularity, fromMs, toMs),
    );
    for (const part of pendingOf(scope, pending)) {
      for (const [minute, counts] of part.minutes) {
        const start = bucketAt(granularity, minute).start;
        if (start >= fromMs && start < toMs) addTo(stored, start, counts);
      }
    }
    return rangeView(bucketStarts(granularity, fromMs, toMs), stored);
  }

  private async series(
    scope: Scope,
    by: SeriesBy,
    granularity: 'day' | 'month',
    fromMs: number,
    toMs: number,
    nowMs: number,
  ): Promise<SeriesView[]> {
    const { stored: series, pending } = await this.reader.snapshot(pendingKeys(scope), (db) =>
      new UsageHistoryRepository(db).series(historyScope(scope), by, granularity, fromMs, toMs),
    );
    const [names, max] = PENDING_NAMES[by];
    for (const part of pendingOf(scope, pending)) {
      for (const period of seriesPeriods(part, nowMs)) {
        if (period.granularity !== granularity || period.start < fromMs || period.start >= toMs) continue;
        const held = new Set(
          [...series].flatMap(([name, buckets]) =>
            name !== OTHER_ENDPOINT && buckets.has(period.start) ? [name] : [],
          ),
        );
        for (const [name, counts] of period[names]) {
          const counted = countedName(held, name, max);
          if (counted !== OTHER_ENDPOINT) held.add(counted);
          addTo(
            entryOf(series, counted, () => new Map()),
            period.start,
            counts,
          );
        }
      }
    }
    return sortedSeries(series, bucketStarts(granularity, fromMs, toMs));
  }
}

const pendingKeys = (scope: Scope): readonly string[] => ('keyId' in scope ? [scope.keyId] : scope.keyIds);

const keyScope = (keyId: string, consumerId: string | undefined): Scope =>
  consumerId === undefined ? { keyId } : { keyId, consumerId };

/** The pending usage of a scope: a key's whole, or a consumer's parts of its (or its keys') usage. */
const pendingOf = (scope: Scope, pending: readonly KeyUsage[]): FiledUsage[] => {
  const { consumerId } = scope;
  if (consumerId === undefined) return [...pending];
  return pending.flatMap((usage) => usage.consumers.get(consumerId) ?? []);
};
