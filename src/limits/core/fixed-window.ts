import { windowAt } from '../../plans/window.js';
import type { LimitAlgorithm } from './limit-algorithm.js';

/** A fixed UTC window: the units counted in it, and when it ends. */
export interface FixedWindow {
  end: number;
  used: number;
}

export const fixedWindow: LimitAlgorithm<FixedWindow> = {
  at(state, rule, nowMs) {
    if (state === undefined) return { end: windowAt(rule.period, nowMs).end, used: 0 };
    if (nowMs >= state.end) {
      state.end = windowAt(rule.period, nowMs).end;
      state.used = 0;
    }
    return state;
  },
  used: (state) => state.used,
  charged(state, _rule, units) {
    state.used += units;
    return state;
  },
  settled(state, rule, delta, admittedMs) {
    if (windowAt(rule.period, admittedMs).end === state.end) state.used = Math.max(0, state.used + delta);
    return state;
  },
  resetMs: (state) => state.end,
  spent: (state, _rule, nowMs) => nowMs >= state.end,
};
