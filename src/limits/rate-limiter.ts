import type { LimitRule, Plan } from './plan.js';

/** Where one limit of a plan stands. */
export interface LimitState {
  readonly rule: LimitRule;
  /** Requests it still allows. */
  readonly remaining: number;
  /**
   * Epoch ms, the `resetTime`: the end of the window for a fixed limit; for a sliding one, when the
   * oldest requests it still counts stop counting (the earliest moment it has more room).
   */
  readonly resetMs: number;
}

/**
 * The outcome of one limiting decision, in the terms of the 429 body and the RateLimit headers: the
 * limit it reports is, when admitted, the one with the fewest requests left (of those, the one whose
 * window ends last) and, when refused, the refusing limit whose window ends last (the earliest moment
 * a retry can succeed).
 */
export interface LimitDecision extends LimitState {
  readonly allowed: boolean;
}

/**
 * Counts admitted requests per key against every limit of its plan. Only admitted requests consume
 * quota, and a request is admitted only when every limit has room, then counted in all of them; so
 * with fixed windows exactly `limit` requests are admitted per window of each limit, however many
 * callers race.
 */
export interface RateLimiter {
  /**
   * Admit and count one request, or refuse it without counting. A decision known at once (in-process
   * counters, a place leased ahead) comes back as a value, so the request path skips a promise.
   */
  consume(keyId: string, plan: Plan, nowMs: number): LimitDecision | Promise<LimitDecision>;
  /** Every limit's state, in the plan's order, without counting anything (for the key detail). */
  peek(keyId: string, plan: Plan, nowMs: number): Promise<LimitState[]>;
  close(): Promise<void>;
}

/**
 * Whether a limit with `remaining` left until `resetMs` is the one to report over the best so far
 * (see LimitDecision): fewer left, or as few and a window that ends later.
 */
export function isTighter(remaining: number, resetMs: number, bestRemaining: number, bestResetMs: number): boolean {
  return remaining < bestRemaining || (remaining === bestRemaining && resetMs > bestResetMs);
}

/** The limit a decision reports among `states`. */
export function tightest<T extends LimitState>(states: readonly T[]): T {
  let best = states[0]!;
  for (let i = 1; i < states.length; i++) if (isTighter(states[i]!.remaining, states[i]!.resetMs, best.remaining, best.resetMs)) best = states[i]!;
  return best;
}
