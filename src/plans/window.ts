/** Fixed windows aligned to UTC. Pure functions: every caller passes the clock in. */

export const PERIODS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'year'] as const;
export type Period = (typeof PERIODS)[number];

export interface RateLimitPolicy {
  readonly limit: number;
  readonly period: Period;
}

export interface Window {
  /** Inclusive start, epoch milliseconds. */
  readonly start: number;
  /** Exclusive end, epoch milliseconds: the `resetTime`. */
  readonly end: number;
}

const FIXED_MS: Partial<Record<Period, number>> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
};
/** 1970-01-01 was a Thursday; weeks start on Monday 1970-01-05. */
const FIRST_MONDAY_MS = 4 * 86_400_000;

export function isPeriod(value: string): value is Period {
  return (PERIODS as readonly string[]).includes(value);
}

export function windowAt(period: Period, nowMs: number): Window {
  if (period === 'month') {
    const d = new Date(nowMs);
    const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    return { start, end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  }
  if (period === 'year') {
    const year = new Date(nowMs).getUTCFullYear();
    return { start: Date.UTC(year, 0, 1), end: Date.UTC(year + 1, 0, 1) };
  }
  const length = FIXED_MS[period]!;
  const offset = period === 'week' ? FIRST_MONDAY_MS : 0;
  const start = Math.floor((nowMs - offset) / length) * length + offset;
  return { start, end: start + length };
}

/** Seconds a client should wait before `resetMs`: whole seconds, rounded up, at least 1. */
export function secondsUntil(resetMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((resetMs - nowMs) / 1000));
}

export function windowSeconds(period: Period, nowMs: number): number {
  const { start, end } = windowAt(period, nowMs);
  return Math.round((end - start) / 1000);
}

/** `YYYY-MM-DDThh:mm:ssZ`, whole seconds in UTC, as Tollgate writes times in headers, 429 bodies, events. */
export function isoSeconds(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19) + 'Z';
}
