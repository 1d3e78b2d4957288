import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import type { LimitNotices } from './limit-notices.js';
import { MemoryRateLimiter } from './memory-limiter.js';
import type {
  BalanceState,
  Decision,
  LimitState,
  RateLimiter,
  Reservation,
  SpentBalance,
} from './rate-limiter.js';
import type { Subject } from '../plans/subject.js';
import type { Visitor } from './visitor.js';

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
  /**
   * Where the in-process fallback tells quota thresholds: its counts start from zero, so a threshold it
   * sees reached, the shared count reached too.
   */
  readonly notices?: LimitNotices;
  /** The app's clock (callers' `nowMs` come from it): the fallback's sweep and the probe's reads follow it. */
  readonly clock?: () => number;
}

/**
 * Puts the shared (Redis) limiter first and decides what happens when it fails: `open` limits each
 * replica in process (each then admits up to the full limit on its own), `closed` refuses; a decision
 * that charges a balance is refused in both.
 *
 * A circuit breaker: the first failure, a refused connection or a command timeout, opens it. Every
 * request then takes the fallback at once, those already waiting on Redis included (they do not sit
 * out their own timeouts), so a hang costs one command timeout, not one per request. While open, a
 * background probe (half-open: one call to Redis, never a request's) closes it as soon as Redis answers.
 */
export class FailoverRateLimiter implements RateLimiter {
  private readonly local: MemoryRateLimiter;
  private probe: NodeJS.Timeout | undefined;
  private readonly mode: 'open' | 'closed';
  private readonly probeIntervalMs: number;
  /** Decisions waiting on Redis: when the circuit opens they take the fallback at once. */
  private readonly waiting = new Set<() => void>();
  private readonly clock: () => number;
  /** The admissions the fallback decided: they settle in process, where they were counted. */
  private readonly decidedHere = new WeakSet<Decision>();

  constructor(
    private readonly shared: RateLimiter,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    { mode, probeIntervalMs = 500, notices, clock = Date.now }: FailoverOptions,
  ) {
    this.local = new MemoryRateLimiter({ notices, clock });
    this.clock = clock;
    this.mode = mode;
    this.probeIntervalMs = probeIntervalMs;
    metrics.degraded.set({ dependency: 'redis' }, 0);
  }

  get degraded(): boolean {
    return this.probe !== undefined;
  }

  consume(
    subjects: readonly Subject[],
    cost: number,
    nowMs: number,
    visitor?: Visitor,
  ): Decision | Promise<Decision> {
    if (this.degraded) return this.fallback(subjects, cost, nowMs, visitor);
    const decided = this.shared.consume(subjects, cost, nowMs, visitor);
    if (!(decided instanceof Promise)) return decided;
    return new Promise<Decision>((resolve, reject) => {
      let settled = false;
      const takeFallback = (): void => {
        this.waiting.delete(takeFallback);
        if (settled) return;
        settled = true;
        try {
          resolve(this.fallback(subjects, cost, nowMs, visitor));
        } catch (err) {
          reject(err);
        }
      };
      // Opened by another request's failure meanwhile: this one stops waiting too.
      this.waiting.add(takeFallback);
      decided.then(
        (decision) => {
          this.waiting.delete(takeFallback);
          // Decided by the fallback meanwhile: places Redis gave this late answer go back.
          if (settled) return decision.release?.();
          settled = true;
          resolve(decision);
        },
        (err: unknown) => {
          this.waiting.delete(takeFallback);
          this.enterDegraded(err, subjects);
          takeFallback();
        },
      );
    });
  }

  /**
   * A balance is never decided in process, whatever the mode: each replica would spend all of it
   * (docs/guides/credits.md: a balance never admits more than it held, on any number of replicas).
   */
  private fallback(
    subjects: readonly Subject[],
    cost: number,
    nowMs: number,
    visitor: Visitor | undefined,
  ): Decision {
    if (this.mode === 'closed' || subjects.some((s) => s.balance !== undefined))
      throw new LimiterUnavailableError();
    const decision = this.local.consume(subjects, cost, nowMs, visitor);
    this.decidedHere.add(decision);
    return decision;
  }

  /**
   * Where the request was counted: in process when the fallback admitted it, else in Redis, where a
   * failing Redis is tried again until it takes the settlement (settle-batches.ts), degraded or not.
   * Redis failing for good, the request keeps its reservation as its cost.
   */
  settle(reservation: Reservation, units: number, nowMs: number): void | Promise<void> {
    if (this.decidedHere.has(reservation.decision)) return this.local.settle(reservation, units, nowMs);
    try {
      const settling = this.shared.settle(reservation, units, nowMs);
      if (settling instanceof Promise)
        return settling.catch((err: unknown) => this.enterDegraded(err, reservation.subjects));
    } catch (err) {
      this.enterDegraded(err, reservation.subjects);
    }
  }

  peekBalances(subjects: readonly Subject[], nowMs: number): Promise<BalanceState[]> {
    if (this.degraded) return Promise.reject(new LimiterUnavailableError());
    return this.shared.peekBalances(subjects, nowMs);
  }

  syncBalances(subjects: readonly Subject[], nowMs: number): Promise<void> {
    return this.shared.syncBalances(subjects, nowMs);
  }

  spentBalances(): SpentBalance[] {
    return this.shared.spentBalances();
  }

  async peek(subjects: readonly Subject[], nowMs: number): Promise<LimitState[]> {
    if (!this.degraded) {
      try {
        return await this.shared.peek(subjects, nowMs);
      } catch (err) {
        this.enterDegraded(err, subjects);
      }
    }
    if (this.mode === 'closed') throw new LimiterUnavailableError();
    return this.local.peek(subjects, nowMs);
  }

  async close(): Promise<void> {
    clearInterval(this.probe);
    this.probe = undefined;
    await Promise.all([this.local.close(), this.shared.close()]);
  }

  /**
   * The probe reads the counts whose decision failed: on a Cluster with one master down, PING
   * would answer while that decision's slot still fails.
   */
  private enterDegraded(err: unknown, subjects: readonly Subject[]): void {
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
        .peek(subjects, this.clock())
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
