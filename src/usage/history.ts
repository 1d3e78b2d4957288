/** Usage over time as the API shows it (contract section 8): zero-filled buckets, stored plus pending. */
import { bucketAt, bucketStarts, seriesPeriods, type Granularity } from './granularity.js';
import type { Buckets, TopKey, UsageHistoryRepository } from './history-repository.js';
import type { UsageReader } from './reader.js';
import { MAX_CUSTOMERS_PER_KEY, MAX_ENDPOINTS_PER_KEY, OTHER_ENDPOINT, addCounts, countedName, emptyBucket, entryOf, type BucketCounts } from './usage.js';

export interface BucketView {
  start: number;
  requests: number;
  successful: number;
  failed: number;
  rateLimited: number;
  averageResponseTimeMs: number;
}

export interface SeriesView {
  name: string;
  buckets: BucketView[];
}

const average = (c: BucketCounts) => (c.requests === 0 ? 0 : Math.round((c.totalDurationMs / c.requests) * 100) / 100);

/** Every bucket start of the range, oldest first, with what `buckets` holds for it or zeros. */
function zeroFilled(starts: readonly number[], buckets: Buckets): BucketView[] {
  return starts.map((start) => {
    const c = buckets.get(start) ?? emptyBucket();
    return { start, requests: c.requests, successful: c.successful, failed: c.failed, rateLimited: c.rateLimited, averageResponseTimeMs: average(c) };
  });
}

function addTo(buckets: Buckets, start: number, counts: BucketCounts): void {
  addCounts(entryOf(buckets, start, emptyBucket), counts);
}

export class UsageHistory {
  constructor(
    private readonly repository: UsageHistoryRepository,
    /** For what is recorded and not yet stored, so a request shows within 2 s like in the detail. */
    private readonly reader: Pick<UsageReader, 'unflushed'>,
  ) {}

  /** A key's buckets over [fromMs, toMs); `fromMs` and `toMs` are bucket boundaries. */
  async forKey(keyId: string, granularity: Granularity, fromMs: number, toMs: number): Promise<BucketView[]> {
    const stored = await this.repository.keyBuckets(keyId, granularity, fromMs, toMs);
    const pending = await this.reader.unflushed(keyId);
    for (const [minute, counts] of pending.minutes) {
      const start = bucketAt(granularity, minute).start;
      if (start >= fromMs && start < toMs) addTo(stored, start, counts);
    }
    return zeroFilled(bucketStarts(granularity, fromMs, toMs), stored);
  }

  /** How many series `seriesForKey` answers, close enough to bound its size (what is stored; pending usage adds few). */
  seriesCount(keyId: string, by: 'endpoint' | 'customer', granularity: 'day' | 'month', fromMs: number, toMs: number): Promise<number> {
    return this.repository.seriesCount(keyId, by, granularity, fromMs, toMs);
  }

  /**
   * A key's usage by endpoint or customer, one zero-filled series per name, most requests first.
   * Pending usage counts in the day and month it happened in, under the name the store will give it:
   * its own, or "(other)" once the period holds as many names as its cap.
   */
  async seriesForKey(keyId: string, by: 'endpoint' | 'customer', granularity: 'day' | 'month', fromMs: number, toMs: number, nowMs: number): Promise<SeriesView[]> {
    const series = await this.repository.series(keyId, by, granularity, fromMs, toMs);
    const max = by === 'endpoint' ? MAX_ENDPOINTS_PER_KEY : MAX_CUSTOMERS_PER_KEY;
    for (const period of seriesPeriods(await this.reader.unflushed(keyId), nowMs)) {
      if (period.granularity !== granularity || period.start < fromMs || period.start >= toMs) continue;
      const held = new Set([...series].flatMap(([name, buckets]) => (name !== OTHER_ENDPOINT && buckets.has(period.start) ? [name] : [])));
      for (const [name, counts] of by === 'endpoint' ? period.endpoints : period.customers) {
        const counted = countedName(held, name, max);
        if (counted !== OTHER_ENDPOINT) held.add(counted);
        addTo(entryOf(series, counted, () => new Map()), period.start, counts);
      }
    }
    const starts = bucketStarts(granularity, fromMs, toMs);
    const total = (b: Buckets) => [...b.values()].reduce((n, c) => n + c.requests, 0);
    return [...series]
      .sort(([a, x], [b, y]) => total(y) - total(x) || (a < b ? -1 : 1))
      .map(([name, buckets]) => ({ name, buckets: zeroFilled(starts, buckets) }));
  }

  /** Every key's buckets summed, and the busiest keys of the range (stored usage: a second behind). */
  async forFleet(granularity: Granularity, fromMs: number, toMs: number): Promise<{ buckets: BucketView[]; topKeys: TopKey[] }> {
    const [buckets, topKeys] = await Promise.all([
      this.repository.fleetBuckets(granularity, fromMs, toMs),
      this.repository.topKeys(granularity, fromMs, toMs, 10),
    ]);
    return { buckets: zeroFilled(bucketStarts(granularity, fromMs, toMs), buckets), topKeys };
  }
}
