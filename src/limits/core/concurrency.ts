import { PLACE_RETRY_MS } from '../rate-limiter.js';
import type { LimitAlgorithm } from './limit-algorithm.js';

/**
 * A concurrency limit (docs/decisions/0096): the places of requests in flight. An admitted request
 * takes one and gives it back when it ends (`released`); a refused one may retry in PLACE_RETRY_MS.
 */
export const concurrency: LimitAlgorithm<number> = {
  at: (places) => places ?? 0,
  used: (places) => places,
  charged: (places, _rule, units) => places + units,
  // A request holds one place whatever it costs.
  settled: (places) => places,
  resetMs: (_places, _rule, nowMs) => nowMs + PLACE_RETRY_MS,
  spent: (places) => places === 0,
};

/** The places once one request ended. */
export const released = (places: number): number => places - 1;
