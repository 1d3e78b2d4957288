import type { Scope } from '../plans/subject.js';
import type { Balance } from '../plans/balance.js';
import { type ConsumeLimit } from './consume-script.js';
import { countOf, oldestSlotOf, type ConsumeReply } from './consume-reply.js';
import { capacityOf, isConcurrency, type LimitRule } from '../plans/plan.js';
import { holdsAt, type Bucket } from './token-bucket.js';
import type { LeaseBook } from './lease-book.js';
import type { QuotaWatch } from './quota-watch.js';
import { isTighter, unitsIn, type BalanceState, type Decision, type LimitState } from './rate-limiter.js';

/**
 * What the Redis limiter (redis-limiter.ts) keeps of each subject's counts on a replica, spans and the
 * groups of a decision's spans, with the requests waiting on them; and what a call's reply means for
 * a group's requests: each one's place, the limit that refused it, every limit's state.
 */

export interface Waiter {
  readonly cost: number;
  /** Where every limit's state goes once decided, when asked for. */
  readonly states: LimitState[] | undefined;
  resolve(decision: Decision): void;
  reject(err: unknown): void;
}

/**
 * One span of one subject's limits on this replica, the stretch in which the window (fixed) or slot
 * (sliding) of each of its limits stays the same: its counts in Redis and its lease book, which every
 * decision charging the subject shares.
 */
export interface Span {
  readonly name: string;
  readonly scope: Scope;
  /** The subject's id, and its balance's hash in Redis (undefined: it holds none). */
  readonly id: string;
  readonly balanceKey: string | undefined;
  /** The latest record of the balance this replica was given (the script takes the newest it meets). */
  balance: Balance | undefined;
  readonly startMs: number;
  readonly endMs: number;
  readonly limits: readonly LimitRule[];
  /** Each limit's count key in Redis. */
  readonly counts: readonly string[];
  /** Each limit's limit, expiry and slot, as the script gets them. */
  readonly consumeLimits: readonly ConsumeLimit[];
  /**
   * Each limit's LimitState.resetMs: a fixed window's end; for a sliding limit, a token bucket or a
   * concurrency limit, set from each answer.
   */
  readonly resets: number[];
  /** Each concurrency limit's places in flight after the latest answer (what its requests report). */
  readonly placesAfter: number[];
  readonly book: LeaseBook;
  /** Its limits' quota thresholds in its windows (undefined: none watched, or nobody listens). */
  readonly watch: QuotaWatch | undefined;
  /** The groups that charge it. */
  readonly groups: Set<Group>;
  /** Calls out that carry its book's terms. */
  callsInFlight: number;
  /** Units those calls give back: not in its counts any more once they ran. */
  returning: number;
}

/**
 * The spans of one decision (those of its subjects that hold limits or a balance, in the subjects'
 * order) and the requests waiting for Redis: a turn's requests for one group go as one call. The keys
 * of a consumer whose own plans hold no limit all share the consumer's group.
 */
export interface Group {
  readonly name: string;
  readonly spans: readonly Span[];
  /**
   * Some span holds a balance: then no request is decided from a lease (a top-up or a set must be in
   * force for the next request, and a leased unit could outlive a set), each goes to Redis.
   */
  readonly balances: number;
  /** The visitor its spans count, by name ('' when no limit of theirs is per visitor). */
  readonly visitor: string;
  /**
   * Its requests may be decided from leases: it holds no balance and no token bucket or concurrency
   * limit (docs/decisions/0095). A visitor's group may: its span's leases are sized by that visitor's
   * demand, as a key's are by the key's (0090).
   */
  readonly leases: boolean;
  /** The concurrency counts of its spans: an admitted request holds a place in each until it ends. */
  readonly placeCounts: readonly string[];
  /** Where every span's window and slot stay the same, epoch ms. */
  readonly startMs: number;
  readonly endMs: number;
  /** The script's KEYS and each span's limits. */
  readonly keys: readonly string[];
  readonly limits: readonly (readonly ConsumeLimit[])[];
  /** Forgotten with one of its spans: a first subject bound to it builds its group again. */
  forgotten: boolean;
  /** Its key's own counts are being moved to its names (key-homes.ts): its decisions wait for that. */
  moving: Promise<void> | undefined;
  waiting: Waiter[];
  /** Requests that did not fit while units were being reclaimed; they ask again after `retryMs`. */
  held: Waiter[];
  retryMs: number;
  scheduled: boolean;
  callsInFlight: number;
  /** Of those, calls asking for a lease: requests that find no room meanwhile wait for it. */
  leaseCalls: number;
}

/** A span some call or request still needs. */
export function isBusy(span: Span): boolean {
  if (span.callsInFlight > 0) return true;
  for (const g of span.groups)
    if (g.scheduled || g.callsInFlight > 0 || g.waiting.length > 0 || g.held.length > 0) return true;
  return false;
}

/** The requests of a call in arrival order as runs of one cost: requests, cost, requests, cost, … */
export function runsOf(waiting: readonly Waiter[]): number[] {
  const runs: number[] = [];
  for (const { cost } of waiting) {
    if (runs.length > 0 && runs[runs.length - 1] === cost) runs[runs.length - 2]!++;
    else runs.push(1, cost);
  }
  return runs;
}

/**
 * A request admitted at `places` (in each span's first limit; its others' by `shifts`) at `nowMs`, its
 * balances leaving `balance` the least; every limit's state goes to `states` when given, and a place that
 * reaches a quota threshold to the span's watch.
 */
export function place(
  group: Group,
  places: readonly number[],
  shifts: readonly (readonly number[])[],
  states: LimitState[] | undefined,
  balance: BalanceState | undefined,
  nowMs: number,
): Decision {
  const spans = group.spans;
  let best: Span | undefined;
  let bestAt = 0;
  let bestRemaining = 0;
  let bestResetMs = 0;
  for (let s = 0; s < spans.length; s++) {
    const span = spans[s]!;
    const at = places[s]!;
    const shift = shifts[s]!;
    const watch = span.watch;
    for (let j = 0; j < span.limits.length; j++) {
      // Its place in limit j's count: the unit that reaches a threshold is told as it is charged.
      const rule = span.limits[j]!;
      const count = isConcurrency(rule) ? span.placesAfter[j]! : at + shift[j]!;
      if (watch !== undefined && count >= watch.nextAt[j]!) watch.reached(j, count, nowMs);
      const remaining = capacityOf(rule) - count;
      if (states !== undefined)
        states.push({ scope: span.scope, rule: span.limits[j]!, remaining, resetMs: span.resets[j]! });
      if (best !== undefined && !isTighter(remaining, span.resets[j]!, bestRemaining, bestResetMs)) continue;
      best = span;
      bestAt = j;
      bestRemaining = remaining;
      bestResetMs = span.resets[j]!;
    }
  }
  return {
    allowed: true,
    limit: best && {
      scope: best.scope,
      rule: best.limits[bestAt]!,
      remaining: bestRemaining,
      resetMs: bestResetMs,
    },
    balance,
  };
}

/** Every limit's state after a call, from its count in the reply. */
export function countsAfter(group: Group, reply: ConsumeReply, into: LimitState[]): void {
  let i = 0;
  for (const span of group.spans)
    span.limits.forEach((rule, j) =>
      into.push({
        scope: span.scope,
        rule,
        remaining: Math.max(0, capacityOf(rule) - countOf(reply, i++)),
        resetMs: span.resets[j]!,
      }),
    );
}

/**
 * A request of `cost` that did not fit at `nowMs`: of the limits without room for it, the one whose
 * window ends last (a token bucket: that holds the cost last) refused it.
 */
export function refusal(group: Group, reply: ConsumeReply, cost: number, nowMs: number): LimitState {
  let by: Span | undefined;
  let at = 0;
  let left = 0;
  let resetMs = 0;
  for (let s = 0, i = 0; s < group.spans.length; s++) {
    const span = group.spans[s]!;
    for (let j = 0; j < span.limits.length; j++, i++) {
      const rule = span.limits[j]!;
      const room = capacityOf(rule) - countOf(reply, i);
      if (room >= unitsIn(rule, cost)) continue;
      const until =
        rule.algorithm === 'tokenBucket'
          ? holdsAt(bucketOf(rule, countOf(reply, i), oldestSlotOf(reply, i), nowMs), rule, cost)
          : span.resets[j]!;
      if (by !== undefined && until <= resetMs) continue;
      by = span;
      at = j;
      left = room;
      resetMs = until;
    }
  }
  return { scope: by!.scope, rule: by!.limits[at]!, remaining: Math.max(0, left), resetMs };
}

/** A token bucket as a call's reply left it at `nowMs`: its count (what it lacks of its burst) and parts. */
export const bucketOf = (rule: LimitRule, count: number, parts: number, nowMs: number): Bucket => ({
  units: capacityOf(rule) - count,
  parts,
  at: nowMs,
});
