import type { Scope } from '../plans/subject.js';
import type { Balance } from '../plans/balance.js';
import type { ConsumeLimit } from './core/redis-twin.js';
import { bucketPartsOf, countOf, NO_SHIFTS, type ConsumeReply } from './consume-reply.js';
import { capacityOf, isConcurrency, type LimitRule } from '../plans/plan.js';
import { type Bucket } from './token-bucket.js';
import type { LeaseBook } from './lease-book.js';
import type { QuotaWatch } from './quota-watch.js';
import {
  balanceStateOf,
  PLACE_RETRY_MS,
  unitsIn,
  type BalanceState,
  type Decision,
  type LimitState,
} from './rate-limiter.js';
import { admissionOf, refusalOf } from './core/combine.js';
import { countedVerdict, verdictOf, type LimitVerdict } from './core/limit-algorithm.js';
import { tokenBucket } from './core/token-bucket.js';

/**
 * What the Redis limiter (redis-limiter.ts) keeps of each subject's counts on a replica, spans and the
 * groups of a decision's spans, with the requests waiting on them; and what a call's reply means for
 * a group's requests: each one's place, the limit that refused it, every limit's state.
 */

export interface Waiter {
  readonly cost: number;
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
  /** Its key's own counts are being moved to its names (recovery/key-homes.ts): its decisions wait for that. */
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
 * balances left at `balances`; a place that reaches a quota threshold goes to the span's watch.
 */
export function place(
  group: Group,
  places: readonly number[],
  shifts: readonly (readonly number[])[],
  balances: readonly BalanceState[],
  nowMs: number,
): Decision {
  const states: LimitState[] = [];
  const spans = group.spans;
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
      states.push({ scope: span.scope, rule, remaining: capacityOf(rule) - count, resetMs: span.resets[j]! });
    }
  }
  return admissionOf(states, balances);
}

/**
 * Whether `group` may take places from pools (concurrency-places.ts): its limits are all concurrency
 * limits, it holds no balance, and none is per visitor (a visitor is never leased anything).
 */
export const canPool = (group: Group): boolean =>
  group.balances === 0 && group.visitor === '' && 2 * group.placeCounts.length === group.keys.length;

/**
 * A request of a group that can pool admitted from its pools at `nowMs`: each limit reports the places
 * in flight as this replica knows them (`inFlight`).
 */
export function pooledPlace(group: Group, inFlight: (count: string) => number, nowMs: number): Decision {
  for (const span of group.spans)
    for (let j = 0; j < span.counts.length; j++) {
      span.placesAfter[j] = inFlight(span.counts[j]!);
      span.resets[j] = nowMs + PLACE_RETRY_MS;
    }
  return place(group, NO_PLACES, NO_SPAN_SHIFTS, [], nowMs);
}
const NO_PLACES: readonly number[] = [0, 0];
const NO_SPAN_SHIFTS: readonly (readonly number[])[] = [NO_SHIFTS, NO_SHIFTS];

/**
 * What each limit of the group says of a request of `cost` at `nowMs`, from its count in a call's
 * reply (a token bucket: the bucket the reply left, which says when it holds the cost).
 */
export function verdictsAfter(
  group: Group,
  reply: ConsumeReply,
  cost: number,
  nowMs: number,
): LimitVerdict[] {
  const verdicts: LimitVerdict[] = [];
  for (let s = 0, i = 0; s < group.spans.length; s++) {
    const span = group.spans[s]!;
    for (let j = 0; j < span.limits.length; j++, i++) {
      const rule = span.limits[j]!;
      const units = unitsIn(rule, cost);
      verdicts.push(
        rule.algorithm === 'tokenBucket'
          ? verdictOf(
              tokenBucket,
              span.scope,
              rule,
              bucketOf(rule, countOf(reply, i), bucketPartsOf(reply, i).parts, nowMs),
              units,
              nowMs,
            )
          : countedVerdict(
              span.scope,
              rule,
              capacityOf(rule) - countOf(reply, i),
              units,
              span.resets[j]!,
              span.resets[j]!,
            ),
      );
    }
  }
  return verdicts;
}

/** A balance of a call, as Redis answered it. */
export interface CalledBalance {
  readonly span: Span;
  readonly epoch: number;
  readonly window: number;
  readonly granted: number;
  /** Units spent before the call's first admitted unit. */
  readonly spentBefore: number;
  /** It refused a request of the call for want of credits. */
  refused: boolean;
}

/**
 * A request of `cost` a call refused after admitting `units` before it, at `nowMs`, by its limits' and
 * balances' verdicts from the reply; the balance that refused it is marked so.
 */
export function refusalAfter(
  group: Group,
  reply: ConsumeReply,
  balances: readonly CalledBalance[],
  units: number,
  cost: number,
  nowMs: number,
): Decision {
  const verdicts = balances.map(({ span, granted, spentBefore }) => ({
    fits: granted - spentBefore - units >= cost,
    before: balanceStateOf(span.scope, span.balance!, Math.max(0, granted - spentBefore - units), nowMs),
  }));
  const short = verdicts.findIndex((v) => !v.fits);
  if (short >= 0) balances[short]!.refused = true;
  return refusalOf(verdictsAfter(group, reply, cost, nowMs), verdicts)!;
}

/** A token bucket as a call's reply left it at `nowMs`: its count (what it lacks of its burst) and parts. */
export const bucketOf = (rule: LimitRule, count: number, parts: number, nowMs: number): Bucket => ({
  units: capacityOf(rule) - count,
  parts,
  at: nowMs,
});
