import { LimiterUnavailableError } from '../../src/limits/failover-limiter.js';
import type { Decision, LimitState, RateLimiter } from '../../src/limits/rate-limiter.js';

/** A limiter whose every call fails with `error`. */
function failingWith(error: () => Error): RateLimiter {
  return {
    consume: (): Promise<Decision> => Promise.reject(error()),
    settle: () => Promise.reject(error()),
    peek: (): Promise<LimitState[]> => Promise.reject(error()),
    peekBalances: () => Promise.reject(error()),
    syncBalances: () => Promise.reject(error()),
    spentBalances: () => [],
    close: () => Promise.resolve(),
  };
}

/** A limiter failing as a bug or an unexpected store error would. */
export const FAILING_LIMITER = failingWith(() => new Error('redis down'));

/** A limiter refusing as the failover limiter does while Redis is out under REDIS_FAILURE_MODE=closed. */
export const UNAVAILABLE_LIMITER = failingWith(() => new LimiterUnavailableError());
