import type { LimitRule } from '../plans/plan.js';
import type { Scope } from '../plans/subject.js';
import type { Balance } from '../plans/balance.js';
import { countOf, type ConsumeLimit, type ConsumeReply } from './consume-script.js';
import type { LeaseBook } from './lease-book.js';
import type { QuotaWatch } from './quota-watch.js';
import { isTighter, type BalanceState, type Decision, type LimitState } from './rate-limiter.js';

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
  /** Each limit's LimitState.resetMs: a fixed window's end; for a sliding limit, set from each answer. */
  readonly resets: number[];
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
      const count = at + shift[j]!;
      if (watch !== undefined && count >= watch.nextAt[j]!) watch.reached(j, count, nowMs);
      const remaining = span.limits[j]!.limit - count;
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
        remaining: Math.max(0, rule.limit - countOf(reply, i++)),
        resetMs: span.resets[j]!,
      }),
    );
}

/** A request of `cost` that did not fit: of the limits without room for it, the one whose window ends last refused it. */
export function refusal(group: Group, reply: ConsumeReply, cost: number): LimitState {
  let by: Span | undefined;
  let at = 0;
  let left = 0;
  for (let s = 0, i = 0; s < group.spans.length; s++) {
    const span = group.spans[s]!;
    for (let j = 0; j < span.limits.length; j++, i++) {
      const room = span.limits[j]!.limit - countOf(reply, i);
      if (room >= cost || (by !== undefined && span.resets[j]! <= by.resets[at]!)) continue;
      by = span;
      at = j;
      left = room;
    }
  }
  return {
    scope: by!.scope,
    rule: by!.limits[at]!,
    remaining: Math.max(0, left),
    resetMs: by!.resets[at]!,
  };
}
