import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import { MemoryRateLimiter } from './memory-limiter.js';
import type { Plan } from './plan.js';
import type { LimitDecision, LimitState, RateLimiter } from './rate-limiter.js';

/** Redis cannot be reached and `REDIS_FAILURE_MODE=closed`: the proxy answers 503 `limit_unavailable`. */
export class LimiterUnavailableError extends Error {
  constructor(cause?: unknown) {
    super('rate limiting is unavailable: Redis does not answer', { cause });
    this.name = 'LimiterUnavailableError';
  }
}

export interface FailoverOptions {
  readonly mode: 'open' | 'closed';
  /** While degraded, how often Redis is asked whether it is back (requests never wait on it). */
  readonly probeIntervalMs?: number;
}

/**
 * Puts the shared (Redis) limiter first and decides what happens when it fails: `open` limits each
 * replica in process (each then admits up to the full limit on its own), `closed` refuses.
 *
 * A circuit breaker: the first failure, a refused connection or a command timeout, opens it. Every
 * request then takes the fallback at once, those already waiting on Redis included (they do not sit
 * out their own timeouts), so a hang costs one command timeout, not one per request. While open, a
 * background probe (half-open: one call to Redis, never a request's) closes it as soon as Redis answers.
 */
export class FailoverRateLimiter implements RateLimiter {
  private readonly local = new MemoryRateLimiter();
  private probe: NodeJS.Timeout | undefined;
  private readonly mode: 'open' | 'closed';
  private readonly probeIntervalMs: number;
  /** Decisions waiting on Redis: when the circuit opens they take the fallback at once. */
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly shared: RateLimiter,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    { mode, probeIntervalMs = 500 }: FailoverOptions,
  ) {
    this.mode = mode;
    this.probeIntervalMs = probeIntervalMs;
    metrics.degraded.set({ dependency: 'redis' }, 0);
  }

  get degraded(): boolean {
    return this.probe !== undefined;
  }

  consume(keyId: string, plan: Plan, nowMs: number): LimitDecision | Promise<LimitDecision> {
    if (this.degraded) return this.fallback(keyId, plan, nowMs);
    const decided = this.shared.consume(keyId, plan, nowMs);
    if (!(decided instanceof Promise)) return decided;
    return new Promise<LimitDecision>((resolve, reject) => {
      const takeFallback = (): void => {
        this.waiting.delete(takeFallback);
        try {
          resolve(this.fallback(keyId, plan, nowMs));
        } catch (err) {
          reject(err);
        }
      };
      // Opened by another request's failure meanwhile: this one stops waiting too.
      this.waiting.add(takeFallback);
      decided.then(
        (decision) => {
          this.waiting.delete(takeFallback);
          resolve(decision);
        },
        (err: unknown) => {
          this.waiting.delete(takeFallback);
          this.enterDegraded(err, keyId, plan);
          takeFallback();
        },
      );
    });
  }

  private fallback(keyId: string, plan: Plan, nowMs: number): LimitDecision {
    if (this.mode === 'closed') throw new LimiterUnavailableError();
    return this.local.consume(keyId, plan, nowMs);
  }

  async peek(keyId: string, plan: Plan, nowMs: number): Promise<LimitState[]> {
    if (!this.degraded) {
      try {
        return await this.shared.peek(keyId, plan, nowMs);
      } catch (err) {
        this.enterDegraded(err, keyId, plan);
      }
    }
    if (this.mode === 'closed') throw new LimiterUnavailableError();
    return this.local.peek(keyId, plan, nowMs);
  }

  async close(): Promise<void> {
    clearInterval(this.probe);
    this.probe = undefined;
    await Promise.all([this.local.close(), this.shared.close()]);
  }

  /**
   * The probe reads the counter whose decision failed: on a Cluster with one master down, PING
   * would answer while that key's slot still fails.
   */
  private enterDegraded(err: unknown, keyId: string, plan: Plan): void {
    if (this.degraded) return;
    this.metrics.degraded.set({ dependency: 'redis' }, 1);
    this.logger.warn(
      { err: (err as Error).message, mode: this.mode },
      this.mode === 'open'
        ? 'Redis unavailable: limiting in process on each replica until it answers again'
        : 'Redis unavailable: refusing proxied requests with 503 limit_unavailable until it answers again',
    );
    for (const takeFallback of [...this.waiting]) takeFallback();
    let probing = false;
    this.probe = setInterval(() => {
      if (probing) return;
      probing = true;
      this.shared
        .peek(keyId, plan, Date.now())
        .then(() => this.leaveDegraded())
        .catch(() => {})
        .finally(() => (probing = false));
    }, this.probeIntervalMs).unref();
  }

  private leaveDegraded(): void {
    if (!this.degraded) return;
    clearInterval(this.probe);
    this.probe = undefined;
    this.metrics.degraded.set({ dependency: 'redis' }, 0);
    this.logger.info('Redis answers again: limiting through Redis');
  }
}
