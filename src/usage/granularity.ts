/** The granularities of usage over time and their UTC-aligned buckets (contract section 8). */
import { windowAt } from '../limits/window.js';

export const GRANULARITIES = ['minute', 'hour', 'day', 'month'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** The bucket of `granularity` that holds the instant `atMs`: [start, end) in epoch ms. */
export function bucketAt(granularity: Granularity, atMs: number): { start: number; end: number } {
  return windowAt(granularity, atMs);
}

/** Starts of every bucket from the one holding `fromMs` up to (not including) `toMs`, oldest first. */
export function bucketStarts(granularity: Granularity, fromMs: number, toMs: number): number[] {
  const starts: number[] = [];
  for (let at = bucketAt(granularity, fromMs).start; at < toMs; at = bucketAt(granularity, at).end) starts.push(at);
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
