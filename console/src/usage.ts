/** Ranges the usage pages offer, and the sums their tables show. */
import { isoSeconds } from './format';
import type { UsageBucket } from './types';

export type Granularity = 'minute' | 'hour' | 'day' | 'month';
export const GRANULARITIES: readonly Granularity[] = ['minute', 'hour', 'day', 'month'];

export interface RangePreset {
  readonly id: string;
  readonly label: string;
  readonly ms: number;
  /** What the chart shows by default: within the API's 1,500 buckets and its retention. */
  readonly granularity: Granularity;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const RANGES: readonly RangePreset[] = [
  { id: '1h', label: 'Last hour', ms: HOUR, granularity: 'minute' },
  { id: '24h', label: '24 hours', ms: DAY, granularity: 'hour' },
  { id: '7d', label: '7 days', ms: 7 * DAY, granularity: 'hour' },
  { id: '30d', label: '30 days', ms: 30 * DAY, granularity: 'day' },
  { id: '90d', label: '90 days', ms: 90 * DAY, granularity: 'day' },
];

export function rangePreset(id: string | null): RangePreset {
  return RANGES.find((r) => r.id === id) ?? RANGES[1]!;
}

/**
 * The API query for a preset ending now. `to` is exclusive and whole seconds: rounded up, so that the
 * requests of the current second are in the range (rounded down at a minute's first second, the
 * minute's bucket was left out until the next refresh).
 */
export function rangeQuery(preset: RangePreset, now = Date.now()): { from: string; to: string } {
  return { from: isoSeconds(now - preset.ms), to: isoSeconds(Math.ceil(now / 1000) * 1000) };
}

/** Every 429 the clients got: the limiter's (`rateLimited`), those for want of credits and those of a concurrency limit. */
export const refusedOf = (b: UsageBucket): number =>
  b.rateLimited + b.outcomes.creditsExhausted + b.outcomes.concurrencyLimited;

export interface UsageTotals {
  readonly requests: number;
  readonly successful: number;
  readonly failed: number;
  /** Refused with a 429: by the limiter, for want of credits or of a place in flight. */
  readonly refused: number;
  /** Weighted by requests over the buckets. */
  readonly averageResponseTimeMs: number;
}

export function sumBuckets(buckets: readonly UsageBucket[]): UsageTotals {
  let requests = 0;
  let successful = 0;
  let failed = 0;
  let refused = 0;
  let time = 0;
  for (const b of buckets) {
    requests += b.requests;
    successful += b.successful;
    failed += b.failed;
    refused += refusedOf(b);
    time += b.averageResponseTimeMs * b.requests;
  }
  return {
    requests,
    successful,
    failed,
    refused,
    averageResponseTimeMs: requests === 0 ? 0 : time / requests,
  };
}
