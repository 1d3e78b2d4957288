import { capacityOf } from '../../plans/plan.js';
import { fullBucket, holdsAt, refilled, type Bucket } from '../token-bucket.js';
import type { LimitAlgorithm } from './limit-algorithm.js';

/**
 * A token bucket (../token-bucket.ts, docs/decisions/0095): it counts what it lacks of its burst. A
 * bucket of a changed plan keeps the units it holds, down to the new burst.
 */
export const tokenBucket: LimitAlgorithm<Bucket> = {
  at: (state, rule, nowMs) => refilled(state ?? fullBucket(rule, nowMs), rule, nowMs),
  used: (state, rule) => capacityOf(rule) - Math.min(state.units, capacityOf(rule)),
  charged: (state, rule, units) => ({
    units: Math.min(state.units, capacityOf(rule)) - units,
    parts: state.parts,
    at: state.at,
  }),
  resetMs: (state, rule, _nowMs, units) => holdsAt(state, rule, units),
  spent: (state, rule, nowMs) => tokenBucket.used(tokenBucket.at(state, rule, nowMs), rule) === 0,
};
