import { windowAt } from '../../plans/window.js';
import type { LimitAlgorithm } from './limit-algorithm.js';

/** A fixed UTC window: the units counted in it, and when it ends. */
export interface FixedWindow {
  readonly end: number;
  readonly used: number;
}

export const fixedWindow: LimitAlgorithm<FixedWindow> = {
  at: (state, rule, nowMs) =>
    state !== undefined && nowMs < state.end ? state : { end: windowAt(rule.period, nowMs).end, used: 0 },
  used: (state) => state.used,
  charged: (state, _rule, units) => ({ end: state.end, used: state.used + units }),
  resetMs: (state) => state.end,
  spent: (state, _rule, nowMs) => nowMs >= state.end,
};
