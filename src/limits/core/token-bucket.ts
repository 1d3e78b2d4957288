import { capacityOf } from '../../plans/plan.js';
import { fullBucket, holdsAt, refilled, type Bucket } from '../token-bucket.js';
import type { LimitAlgorithm } from './limit-algorithm.js';

/** A bucket as a limiter holds it: brought up to date and charged in place. */
export type HeldBucket = { -readonly [F in keyof Bucket]: Bucket[F] };

/**
 * A token bucket (../token-bucket.ts, docs/decisions/0095): it counts what it lacks of its burst. A
 * bucket of a changed plan keeps the units it holds, down to the new burst.
 */
export const tokenBucket: LimitAlgorithm<HeldBucket> = {
  at(state, rule, nowMs) {
    if (state === undefined) return fullBucket(rule, nowMs);
    const now = refilled(state, rule, nowMs);
    state.units = now.units;
    state.parts = now.parts;
    state.at = now.at;
    return state;
  },
  used: (state, rule) => capacityOf(rule) - Math.min(state.units, capacityOf(rule)),
  charged(state, rule, units) {
    state.units = Math.min(state.units, capacityOf(rule)) - units;
    return state;
  },
  // A bucket holds what a request was charged whenever it was: a refund fills it up to its burst at most.
  settled(state, rule, delta) {
    state.units = Math.min(Math.min(state.units, capacityOf(rule)) - delta, capacityOf(rule));
    if (state.units >= capacityOf(rule)) state.parts = 0;
    return state;
  },
  resetMs: (state, rule, _nowMs, units) => holdsAt(state, rule, units),
  spent: (state, rule, nowMs) => tokenBucket.used(refilled(state, rule, nowMs), rule) === 0,
};
