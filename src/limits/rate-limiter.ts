import type { RateLimitPolicy } from './window.js';

/** The outcome of one limiting decision, in the terms of the 429 body and the RateLimit headers. */
export interface LimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  /** Requests still allowed in this window after this decision. */
  readonly remaining: number;
  /** Window end, epoch ms: the `resetTime`. */
  readonly resetMs: number;
}

/**
 * Counts admitted requests per key in fixed UTC windows. Only admitted requests consume quota, so
 * with limit L exactly L are admitted per window, however many callers race.
 */
export interface RateLimiter {
  /**
   * Admit and count one request, or refuse it without counting. A decision known at once (in-process
   * counters, a place leased ahead) comes back as a value, so the request path skips a promise.
   */
  consume(keyId: string, policy: RateLimitPolicy, nowMs: number): LimitDecision | Promise<LimitDecision>;
  /** The state of the current window without counting anything (for the key detail). */
  peek(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision>;
  close(): Promise<void>;
}
