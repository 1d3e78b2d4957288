/**
 * What the limiters noticed for the outbox (docs/guides/webhooks.md, docs/decisions/0052): `quota.threshold`,
 * `credits.low`, `credits.exhausted`. The request path only notes them here, in memory; a background
 * task (notice-writer.ts) takes them to the outbox every second. Each carries a once-key naming its
 * subject, limit or balance period, and threshold, so however many replicas notice the same thing, and
 * however often, the outbox writes it once; this process also drops what it noted already, so a busy
 * subject above a threshold costs no database write.
 */
import { nextRefillAt, type Balance } from '../plans/balance.js';
import type { LimitRule } from '../plans/plan.js';
import { ID_FIELDS, type Scope } from '../plans/subject.js';
import { isoSeconds, type Window } from '../plans/window.js';
import type { NewEvent } from '../store/outbox.js';
import type { QuotaThreshold } from './quota-thresholds.js';

/**
 * A once-key is kept this long past the last moment its event can be noticed again (a window's end, a
 * balance's next refill): replicas' clocks differ by milliseconds, a replica's view of a window by up
 * to the counters' grace.
 */
const ONCE_MARGIN_MS = 60_000;
/** A balance without refill keeps its period until it is set or topped up: its notices are kept a year. */
const NO_REFILL_ONCE_MS = 366 * 86_400_000;
/** Once-keys whose time passed are forgotten this often: the map holds a month's thresholds of every subject. */
const PRUNE_EVERY_MS = 60_000;

/** One period of a balance (plans/balance.ts): a set starts one (epoch), a refill one (window), a top-up one (granted). */
export interface BalancePeriod {
  readonly epoch: number;
  readonly window: number;
  readonly granted: number;
}

export class LimitNotices {
  private pending: NewEvent[] = [];
  /** The once-keys this process noted, with the time (ms) after which they may be forgotten. */
  private readonly noted = new Map<string, number>();
  private prunedAt = -Infinity;

  /** A limit of `scope`/`id` reached `threshold` % of `window` with a request charged at `atMs`. */
  quotaReached(
    scope: Scope,
    id: string,
    rule: LimitRule,
    window: Window,
    threshold: QuotaThreshold,
    atMs: number,
  ): void {
    // The limit's value is part of it: a plan changed to a higher limit in the window starts its thresholds afresh.
    const key = `quota.threshold:${scope}:${id}:${rule.name}:${rule.limit}:${window.start}:${threshold}`;
    this.note(key, window.end + ONCE_MARGIN_MS, () => ({
      type: 'quota.threshold',
      at: new Date(atMs),
      data: JSON.stringify({
        [ID_FIELDS[scope]]: id,
        scope,
        limit: { name: rule.name, period: rule.period, limit: rule.limit, algorithm: rule.algorithm },
        window: { start: isoSeconds(window.start), end: isoSeconds(window.end) },
        threshold,
      }),
    }));
  }

  /** A balance of `scope`/`id` holds `remaining`, below `lowAt`, after a charge at `atMs`. */
  creditsLow(
    scope: Scope,
    id: string,
    balance: Balance,
    period: BalancePeriod,
    remaining: number,
    lowAt: number,
    atMs: number,
  ): void {
    this.noteCredits('credits.low', scope, id, balance, period, atMs, { remaining, lowAt });
  }

  /** A balance of `scope`/`id` can pay no more: a charge left it at 0, or it refused a request for want of credits. */
  creditsExhausted(
    scope: Scope,
    id: string,
    balance: Balance,
    period: BalancePeriod,
    remaining: number,
    atMs: number,
  ): void {
    this.noteCredits('credits.exhausted', scope, id, balance, period, atMs, { remaining });
  }

  /** The events noted since the last call, oldest first, for the outbox; forgets once-keys whose time passed. */
  take(nowMs: number): NewEvent[] {
    if (nowMs - this.prunedAt >= PRUNE_EVERY_MS) {
      this.prunedAt = nowMs;
      for (const [key, until] of this.noted) if (until < nowMs) this.noted.delete(key);
    }
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  /** Events the outbox could not take: first in the next `take`. */
  putBack(events: readonly NewEvent[]): void {
    this.pending = [...events, ...this.pending];
  }

  private noteCredits(
    type: 'credits.low' | 'credits.exhausted',
    scope: Scope,
    id: string,
    balance: Balance,
    { epoch, window, granted }: BalancePeriod,
    atMs: number,
    level: { remaining: number; lowAt?: number },
  ): void {
    const refillMs = balance.refill === null ? null : nextRefillAt(balance.refill, atMs);
    const until = (refillMs ?? atMs + NO_REFILL_ONCE_MS) + ONCE_MARGIN_MS;
    this.note(`${type}:${scope}:${id}:${epoch}:${window}:${granted}`, until, () => ({
      type,
      at: new Date(atMs),
      data: JSON.stringify({
        [ID_FIELDS[scope]]: id,
        scope,
        ...level,
        refill: balance.refill,
        resetTime: refillMs === null ? null : isoSeconds(refillMs),
      }),
    }));
  }

  private note(key: string, untilMs: number, event: () => Omit<NewEvent, 'once'>): void {
    if (this.noted.has(key)) return;
    this.noted.set(key, untilMs);
    this.pending.push({ ...event(), once: { key, until: new Date(untilMs) } });
  }
}
