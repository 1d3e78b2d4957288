/**
 * The thresholds of `quota.threshold` (docs/guides/webhooks.md, docs/decisions/0052): which limits have them, the
 * counts at which they are reached, and the window a charge counts toward. Pure.
 */
import type { LimitRule } from '../plans/plan.js';
import { windowAt, type Period, type Window } from '../plans/window.js';
import { slotAt, slotMs } from './sliding-window.js';

/** The thresholds, in percent of a limit, lowest first. */
export const QUOTA_THRESHOLDS = [80, 100] as const;
export type QuotaThreshold = (typeof QUOTA_THRESHOLDS)[number];

/** The count at which a limit of `limit` reaches `threshold` %: ⌈limit × threshold / 100⌉, exact for every safe integer. */
export function thresholdCount(limit: number, threshold: QuotaThreshold): number {
  return threshold === 100 ? limit : limit - Math.floor(limit / 5);
}

/**
 * Limits of an hour or longer have thresholds; shorter ones would tell every minute. A limit per
 * visitor has none: one visitor reaching it says nothing about the key.
 */
const WATCHED_PERIODS: ReadonlySet<Period> = new Set(['hour', 'day', 'week', 'month', 'year']);

/** Token buckets and concurrency limits count no window's quota: they have no thresholds. */
export const isWatched = (rule: LimitRule): boolean =>
  (rule.algorithm === 'fixed' || rule.algorithm === 'sliding') &&
  WATCHED_PERIODS.has(rule.period) &&
  rule.per === undefined;

/**
 * The window whose thresholds a charge at `nowMs` counts toward: a fixed limit's window; for a sliding
 * limit, which has no window of its own, the UTC window of its period in which the charge's slot began
 * (an hour's and a day's slots lie inside them; a slot of a week, month or year may begin in one and end
 * in the next). So a sliding limit tells each threshold at most once per such window.
 */
export function thresholdWindow(rule: LimitRule, nowMs: number): Window {
  if (rule.algorithm === 'fixed') return windowAt(rule.period, nowMs);
  return windowAt(rule.period, slotAt(rule.period, nowMs) * slotMs(rule.period));
}

/** When charges stop counting toward `window` (thresholdWindow's): its end, or for a sliding limit the first slot begun at or after it. */
export function windowGivesWayAt(rule: LimitRule, window: Window): number {
  if (rule.algorithm === 'fixed') return window.end;
  const slot = slotMs(rule.period);
  return Math.ceil(window.end / slot) * slot;
}
