import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import { MemoryRateLimiter } from './memory-limiter.js';
import type { LimitDecision, RateLimiter } from './rate-limiter.js';
import type { RateLimitPolicy } from './window.js';

/** Redis cannot be reached and `REDIS_FAILURE_MODE=closed`: the proxy answers 503 `limit_unavailable`. */
export class LimiterUnavailableError extends Error {
  constructor(cause?: unknown) {
    super('rate limiting is unavailable: Redis does not answer', { cause });
    this.name = 'LimiterUnavailableError';
  }
}

const TIMEOUTS_BEFORE_DEGRADED = 3;

/** ioredis' `commandTimeout` rejection: the connection may be fine and the answer merely late. */
function isTimeout(err: unknown): boolean {
  return err instanceof Error && /timed? ?out/i.test(err.message);
}

export interface FailoverOptions {
  readonly mode: 'open' | 'closed';
  /** While degraded, how often Redis is asked whether it is back (requests never wait on it). */
  readonly probeIntervalMs?: number;
}

/**
 * Puts the shared (Redis) limiter first and decides what happens when it fails: `open` limits each
 * replica in process (each then admits up to the full limit on its own), `closed` refuses. The
 * first failure switches to degraded mode, where requests no longer touch Redis, so an outage costs
 * at most one command timeout; a background probe switches back as soon as Redis answers.
 */
export class FailoverRateLimiter implements RateLimiter {
  private readonly local = new MemoryRateLimiter();
  private probe: NodeJS.Timeout | undefined;
  private readonly mode: 'open' | 'closed';
  private readonly probeIntervalMs: number;
  /** Timeouts in a row: one slow answer (a busy event loop) is not an outage. */
  private timeoutsInARow = 0;
  /**
   * The last timeout counted: requests batched into one Redis command share its error, and one late
   * command counts once however many requests waited on it.
   */
  private lastTimeout: unknown = undefined;

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

  consume(keyId: string, policy: RateLimitPolicy, nowMs: number): LimitDecision | Promise<LimitDecision> {
    if (this.degraded) return this.fallback(keyId, policy, nowMs);
    const decided = this.shared.consume(keyId, policy, nowMs);
    if (!(decided instanceof Promise)) return decided;
    return decided.then(
      (decision) => {
        this.timeoutsInARow = 0;
        return decision;
      },
      (err: unknown) => {
        // A refused connection is an outage at once; timeouts only when several come in a row.
        if (!isTimeout(err)) this.enterDegraded(err, keyId, policy);
        else if (err !== this.lastTimeout) {
          this.lastTimeout = err;
          if (++this.timeoutsInARow >= TIMEOUTS_BEFORE_DEGRADED) this.enterDegraded(err, keyId, policy);
        }
        return this.fallback(keyId, policy, nowMs);
      },
    );
  }

  private fallback(keyId: string, policy: RateLimitPolicy, nowMs: number): LimitDecision {
    if (this.mode === 'closed') throw new LimiterUnavailableError();
    return this.local.consume(keyId, policy, nowMs);
  }

  async peek(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision> {
    if (!this.degraded) {
      try {
        return await this.shared.peek(keyId, policy, nowMs);
      } catch (err) {
        this.enterDegraded(err, keyId, policy);
      }
    }
    if (this.mode === 'closed') throw new LimiterUnavailableError();
    return this.local.peek(keyId, policy, nowMs);
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
  private enterDegraded(err: unknown, keyId: string, policy: RateLimitPolicy): void {
    if (this.degraded) return;
    this.metrics.degraded.set({ dependency: 'redis' }, 1);
    this.logger.warn(
      { err: (err as Error).message, mode: this.mode },
      this.mode === 'open'
        ? 'Redis unavailable: limiting in process on each replica until it answers again'
        : 'Redis unavailable: refusing proxied requests with 503 limit_unavailable until it answers again',
    );
    let probing = false;
    this.probe = setInterval(() => {
      if (probing) return;
      probing = true;
      this.shared
        .peek(keyId, policy, Date.now())
        .then(() => this.leaveDegraded())
        .catch(() => {})
        .finally(() => (probing = false));
    }, this.probeIntervalMs).unref();
  }

  private leaveDegraded(): void {
    if (!this.degraded) return;
    this.timeoutsInARow = 0;
    clearInterval(this.probe);
    this.probe = undefined;
    this.metrics.degraded.set({ dependency: 'redis' }, 0);
    this.logger.info('Redis answers again: limiting through Redis');
  }
}
