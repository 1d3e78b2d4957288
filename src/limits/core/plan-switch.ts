import { capacityOf, isConcurrency, type LimitRule } from '../../plans/plan.js';
import type { LimitAlgorithm } from './limit-algorithm.js';

/**
 * Switching plans never grants a fresh quota (docs/decisions/0175-plan-switch-carries-spent-units.md):
 * each limit of the new plan starts from what was spent in the current window under the old plan's
 * limits of the same period and `per`, whatever the algorithms and `match` of either. Both limiters
 * decide it here (the consume script's twin: plan-switch.lua.ts).
 */

/** One limit as a limiter holds it: its rule, its algorithm and its state (undefined: nothing counted). */
export interface CountedLimit {
  readonly rule: LimitRule;
  readonly algorithm: LimitAlgorithm<unknown>;
  readonly state: unknown;
}

/**
 * Whether what `old` spent carries into `next`: the same period, both counting the key or consumer as
 * a whole. A concurrency limit counts places in flight, not a period's units: it carries nothing.
 */
export const carriesInto = (old: LimitRule, next: LimitRule): boolean =>
  !isConcurrency(old) &&
  !isConcurrency(next) &&
  old.period === next.period &&
  old.per === undefined &&
  next.per === undefined;

/** The units spent at `nowMs` in `counted`'s current window (a token bucket: what it lacks of its burst). */
export function spentIn(counted: CountedLimit, nowMs: number): number {
  const { algorithm, rule, state } = counted;
  return state === undefined ? 0 : algorithm.used(algorithm.at(state, rule, nowMs), rule);
}

/**
 * The state each of `next` (the new plan's limits) starts from once the plan switched from limits
 * `old` (what the limiter counted before): charged at `nowMs` up to the most any old limit it carries
 * from spent (never beyond its capacity), or left as it is when it already counts as much.
 */
export function switchedStates(
  old: readonly CountedLimit[],
  next: readonly CountedLimit[],
  nowMs: number,
): unknown[] {
  const spent = old.map((counted) => spentIn(counted, nowMs));
  return next.map(({ rule, algorithm, state }) => {
    let units = 0;
    old.forEach((o, i) => {
      if (carriesInto(o.rule, rule)) units = Math.max(units, spent[i]!);
    });
    return raisedTo(algorithm, rule, state, units, nowMs);
  });
}

/** `state` brought up to `nowMs` and charged so that it counts at least `units` (at most its capacity). */
export function raisedTo<S>(
  algorithm: LimitAlgorithm<S>,
  rule: LimitRule,
  state: S | undefined,
  units: number,
  nowMs: number,
): S | undefined {
  if (units === 0) return state;
  const current = algorithm.at(state, rule, nowMs);
  const short = Math.min(units, capacityOf(rule)) - algorithm.used(current, rule);
  return short > 0 ? algorithm.charged(current, rule, short) : current;
}
