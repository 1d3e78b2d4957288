import type { Decision, LimitState, RateLimiter } from '../../src/limits/rate-limiter.js';

/** A limiter whose every call fails, as one does while its store does not answer (REDIS_FAILURE_MODE=closed). */
export const FAILING_LIMITER: RateLimiter = {
  consume: (): Promise<Decision> => Promise.reject(new Error('redis down')),
  peek: (): Promise<LimitState[]> => Promise.reject(new Error('redis down')),
  peekBalances: () => Promise.reject(new Error('redis down')),
  syncBalances: () => Promise.reject(new Error('redis down')),
  spentBalances: () => [],
  close: () => Promise.resolve(),
};
