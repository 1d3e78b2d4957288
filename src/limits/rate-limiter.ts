import { nextRefillAt, type Balance } from '../plans/balance.js';
import { isConcurrency, MIN_COST, type LimitRule } from '../plans/plan.js';
import { MAX_SETTLE_UNITS } from '../plans/usage-pricing.js';
import { isCharged, type Scope, type Subject } from '../plans/subject.js';
import type { Visitor } from './visitor.js';

/** A decision covers at most one subject of each scope: the key and its consumer. */
export const MAX_SUBJECTS = 2;

/** Where one limit of a subject stands. */
export interface LimitState {
  readonly scope: Scope;
  readonly rule: LimitRule;
  /** Units it still allows. */
  readonly remaining: number;
  /**
   * Epoch ms, the `resetTime`: the end of the window for a fixed limit; for a sliding one, when the
   * oldest units it still counts stop counting (the earliest moment it has more room), in whole seconds;
   * for a token bucket, when it holds one unit (a refused request's cost, for the refusing limit),
   * `nowMs` or earlier when it does; for a concurrency limit, a second from the decision (a place
   * frees whenever a request ends: answers show `resetTime: null` and `Retry-After: 1`).
   */
  readonly resetMs: number;
}

/** Where one balance of a subject stands (docs/guides/credits.md). */
export interface BalanceState {
  readonly scope: Scope;
  /** Units it holds. */
  readonly remaining: number;
  /** Its next refill, epoch ms: the `resetTime` of a balance that ran out; null without a refill. */
  readonly refillMs: number | null;
}

/**
 * The outcome of one decision, in the terms of the 429 bodies and the RateLimit headers.
 *
 * `limit`: admitted, the limit with the fewest units left (of those, the one whose window ends last);
 * refused by a limit, the refusing limit (one without room for the cost) whose window ends last (the
 * earliest moment a retry can succeed), its `remaining` what it still holds, less than the cost.
 * Undefined when no limit applies (a balance alone) or when a balance refused.
 *
 * `balance`: admitted, the balance with the fewest units left after the charge; refused by a balance
 * (`credits_exhausted`), the one that does not hold the cost, the key's before its consumer's. A
 * refusal reports a balance rather than a limit when both fall short: the limit's window would pass,
 * the balance would still be short.
 */
export interface Decision {
  readonly allowed: boolean;
  readonly limit: LimitState | undefined;
  readonly balance: BalanceState | undefined;
  /** Every limit's state after the decision, subject by subject (what verify answers). */
  readonly states: readonly LimitState[];
  /**
   * Admitted with a concurrency limit: gives its places back; call once, when the response ends, the
   * client leaves or the backend times out (docs/decisions/0096). Absent: no place was taken.
   */
  readonly release?: () => void;
}

/** A request refused by a concurrency limit may try again in a second (its `Retry-After`). */
export const PLACE_RETRY_MS = 1_000;

/** The units a request counts in a limit: its cost, or one place of a concurrency limit. */
export const unitsIn = (rule: LimitRule, cost: number): number => (isConcurrency(rule) ? 1 : cost);

/** A refusal by a concurrency limit: answered 429 `concurrency_limit_exceeded`. */
export const refusedForPlaces = (d: Decision): boolean =>
  !d.allowed && d.limit !== undefined && isConcurrency(d.limit.rule);

/** The state of a balance of `scope` when it holds `remaining` units at `nowMs`. */
export function balanceStateOf(
  scope: Scope,
  balance: Balance,
  remaining: number,
  nowMs: number,
): BalanceState {
  const refill = balance.refill;
  return { scope, remaining, refillMs: refill === null ? null : nextRefillAt(refill, nowMs) };
}

/** A refusal: by a balance when it reports one, else by a limit. */
export const refusedForCredits = (d: Decision): boolean => !d.allowed && d.balance !== undefined;

/** What a replica saw spent of one balance in one of its periods (limits report it for the database to keep). */
export interface SpentBalance {
  readonly scope: Scope;
  readonly id: string;
  readonly epoch: number;
  readonly window: number;
  readonly spent: number;
}

/**
 * What an admitted request was charged, kept to settle it once its cost is known (`RateLimiter.settle`):
 * the subjects and visitor it was decided for, the units it reserved and when.
 */
export interface Reservation {
  /** The admission (a limiter may tell by it where the request was counted). */
  readonly decision: Decision;
  readonly subjects: readonly Subject[];
  readonly visitor?: Visitor;
  readonly reserved: number;
  /** Epoch ms: the windows, slots and balance periods it was charged in. */
  readonly admittedMs: number;
}

/**
 * Counts admitted units against every limit and balance of every subject of a request. A request of
 * cost c is admitted only when every limit of every subject has room for c and every balance holds c,
 * and is then charged c in all of them, atomically: with fixed windows exactly `limit` units are
 * admitted per window of each limit, and a balance never goes below 0, however many callers race and
 * whichever keys of a consumer they use. Refused requests charge nothing.
 */
export interface RateLimiter {
  /**
   * Admit and charge one request of `cost` units, or refuse it without charging. At least one subject
   * holds a limit or a balance. A decision known at once (in-process counters, units leased ahead)
   * comes back as a value, so the request path skips a promise.
   */
  consume(
    subjects: readonly Subject[],
    cost: number,
    nowMs: number,
    /** Whom limits per visitor count: given when a subject's plan has such a limit (visitor.ts). */
    visitor?: Visitor,
  ): Decision | Promise<Decision>;
  /**
   * Charges `units − reserved` (a refund when negative) to every limit and balance the reservation was
   * charged to, in the windows, slots and balance periods it was charged in (those that have ended are
   * left as they are), in one atomic step that never refuses (docs/decisions/0191). Concurrency places
   * are not units: they are unchanged.
   */
  settle(reservation: Reservation, units: number, nowMs: number): void | Promise<void>;
  /** Every limit's state, subject by subject in the order given, without charging anything. */
  peek(subjects: readonly Subject[], nowMs: number): Promise<LimitState[]>;
  /** Every balance's state, subject by subject, without charging anything: what it holds, below 0 when overdrawn. */
  peekBalances(subjects: readonly Subject[], nowMs: number): Promise<BalanceState[]>;
  /**
   * Brings the subjects' balances up to their records now (a top-up or a set just committed), so the
   * next request on every replica is decided by them.
   */
  syncBalances(subjects: readonly Subject[], nowMs: number): Promise<void>;
  /** What this replica saw spent of each balance it charged since the last call, for the database to keep. */
  spentBalances(): SpentBalance[];
  close(): Promise<void>;
}

/**
 * A cost the limiter accepts: a whole number of units from MIN_COST to MAX_SETTLE_UNITS (a plan's costs
 * go to MAX_COST, a reservation from a request's body further); anything else is a bug upstream.
 */
export function checkCost(cost: number): void {
  if (!Number.isInteger(cost) || cost < MIN_COST || cost > MAX_SETTLE_UNITS)
    throw new RangeError(`a request costs ${MIN_COST} to ${MAX_SETTLE_UNITS} units, not ${cost}`);
}

/** Subjects the limiter can decide for: one of each scope at most, and at least one limit or balance among them. */
export function checkSubjects(subjects: readonly Subject[]): void {
  for (let i = 0; i < subjects.length; i++)
    for (let j = 0; j < i; j++)
      if (subjects[j]!.scope === subjects[i]!.scope)
        throw new RangeError(`a decision has one ${subjects[i]!.scope} at most`);
  if (!subjects.some(isCharged)) throw new RangeError('a decision needs a subject with a limit or a balance');
}

/** How a limit is named in the RateLimit headers, the 429 body and the key detail: `consumer.<name>` for a consumer's. */
export function limitName(scope: Scope, rule: LimitRule): string {
  return scope === 'key' ? rule.name : `consumer.${rule.name}`;
}

/**
 * Whether a limit with `remaining` left until `resetMs` is the one to report over the best so far
 * (see Decision): fewer left, or as few and a window that ends later.
 */
export function isTighter(
  remaining: number,
  resetMs: number,
  bestRemaining: number,
  bestResetMs: number,
): boolean {
  return remaining < bestRemaining || (remaining === bestRemaining && resetMs > bestResetMs);
}

/** The limit a decision reports among `states`. */
export function tightest<T extends LimitState>(states: readonly T[]): T {
  let best = states[0]!;
  for (let i = 1; i < states.length; i++)
    if (isTighter(states[i]!.remaining, states[i]!.resetMs, best.remaining, best.resetMs)) best = states[i]!;
  return best;
}
