import { oldestCounted, slidingResetAt, SLOTS, slotAt } from '../sliding-window.js';
import type { LimitAlgorithm } from './limit-algorithm.js';

/**
 * A sliding window in slots (../sliding-window.ts): the units of slots `newest − SLOTS … newest`, in a
 * ring of SLOTS + 1 places (slot s at s mod (SLOTS + 1)), and their sum.
 */
export interface SlidingWindow {
  newest: number;
  readonly ring: number[];
  used: number;
}

const RING = SLOTS + 1;

export const slidingWindow: LimitAlgorithm<SlidingWindow> = {
  at(state, rule, nowMs) {
    const slot = slotAt(rule.period, nowMs);
    if (state === undefined) return { newest: slot, ring: new Array<number>(RING).fill(0), used: 0 };
    if (slot <= state.newest) return state;
    // The ring's places for the new slots held slots that have left the window: emptied.
    const ring = state.ring;
    for (let s = Math.max(state.newest + 1, oldestCounted(slot)); s <= slot; s++) {
      state.used -= ring[s % RING]!;
      ring[s % RING] = 0;
    }
    state.newest = slot;
    return state;
  },
  used: (state) => state.used,
  charged(state, _rule, units) {
    state.ring[state.newest % RING]! += units;
    state.used += units;
    return state;
  },
  settled(state, rule, delta, admittedMs) {
    const slot = slotAt(rule.period, admittedMs);
    if (slot < oldestCounted(state.newest) || slot > state.newest) return state;
    const applied = Math.max(delta, -state.ring[slot % RING]!);
    state.ring[slot % RING]! += applied;
    state.used += applied;
    return state;
  },
  // When the oldest slot still holding units stops counting (the newest's when none does).
  resetMs(state, rule) {
    for (let s = oldestCounted(state.newest); s < state.newest; s++)
      if (state.ring[s % RING]! > 0) return slidingResetAt(rule.period, s);
    return slidingResetAt(rule.period, state.newest);
  },
  spent: (state, rule, nowMs) => state.used === 0 || oldestCounted(slotAt(rule.period, nowMs)) > state.newest,
};
