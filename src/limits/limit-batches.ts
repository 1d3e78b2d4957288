import { corkedWrites, type RedisClient } from '../redis/connect.js';
import { defineConsumeScript, inWindows, slotOf, type ConsumeScript } from './consume-script.js';
import { TWIN_OF } from './core/algorithms.js';
import {
  admittedOf,
  balanceOf,
  bucketPartsOf,
  countOf,
  heldOf,
  leasedOf,
  lostOf,
  NO_SHIFTS,
  oldestSlotOf,
  placesLeasedOf,
  shiftsOf,
  type ConsumeReply,
  type ReplyLayout,
} from './consume-reply.js';
import type { CreditWatch } from './credit-watch.js';
import type { LeaseCall } from './lease-book.js';
import type { LeaseReclaim } from './lease-reclaim.js';
import type { LimitWatches } from './limit-watches.js';
import {
  balanceStateOf,
  MAX_SUBJECTS,
  PLACE_RETRY_MS,
  type BalanceState,
  type Decision,
} from './rate-limiter.js';
import { balanceTerms } from './redis-balances.js';
import type { Recovery } from './recovery/recovery.js';
import type { ConcurrencyPlaces } from './concurrency-places.js';
import { bucketsLeft } from './buckets-left.js';
import {
  bucketOf,
  place,
  refusalAfter,
  runsOf,
  type CalledBalance,
  type Group,
  type Waiter,
} from './limiter-groups.js';
import { isConcurrency } from '../plans/plan.js';
import { tokenBucket } from './core/token-bucket.js';

/** Requests waiting for a reclaim ask again after 1, 2, 4, … ms, then every 64 ms. */
export const FIRST_RETRY_MS = 1;
const LAST_RETRY_MS = 64;

/**
 * The calls of the Redis limiter (redis-limiter.ts): a turn's requests for one group go to Redis as
 * one consume script call (consume-script.ts), sent at the end of the turn with every other group's
 * in one write (a corked socket on a single Redis, per-node auto-pipelines on a Cluster); the reply
 * decides them, and a request whose every span's lease holds its cost is decided without a call.
 */
export class LimitBatches {
  private readonly consumeScript: ConsumeScript;
  /** Groups with a call to send at the end of this turn. */
  private due: Group[] = [];
  /**
   * Scratch, filled and read at once, per span of the decision under way: its place (in the span's
   * first limit's count), its shifts, and where a call's admitted units start.
   */
  private readonly places: number[] = Array.from({ length: MAX_SUBJECTS }, () => 0);
  private readonly shifts: (readonly number[])[] = Array.from({ length: MAX_SUBJECTS }, () => NO_SHIFTS);
  private readonly bases: number[] = Array.from({ length: MAX_SUBJECTS }, () => 0);
  private readonly creditWatch: CreditWatch | undefined;
  private readonly sendDue = (): void => {
    const due = this.due;
    this.due = [];
    // send() never rejects: a failed call rejects its waiters instead.
    corkedWrites(this.client, () => {
      for (const group of due) {
        group.scheduled = false;
        void this.send(group);
      }
    });
  };

  constructor(
    private readonly client: RedisClient,
    private readonly clock: () => number,
    private readonly reclaim: LeaseReclaim,
    private readonly recovery: Recovery,
    private readonly watches: LimitWatches,
    /** This replica's places of concurrency limits: a call gives back a pool's idle ones and leases it more. */
    private readonly pools: ConcurrencyPlaces,
  ) {
    this.consumeScript = defineConsumeScript(client);
    this.creditWatch = watches.credits;
  }

  /** A request every book of `group` holds the cost of, at `nowMs`: its units, taken from each lease. */
  takeLeased(group: Group, cost: number, nowMs: number): Decision {
    const spans = group.spans;
    let wantsNext = false;
    for (let s = 0; s < spans.length; s++) {
      const book = spans[s]!.book;
      this.places[s] = book.take(cost);
      this.shifts[s] = book.shifts;
      if (book.wantsNext(nowMs)) wantsNext = true;
    }
    // One call asks for a book's next lease: the other groups sharing the book (a consumer's keys) send none for it.
    if (wantsNext && this.schedule(group))
      for (const span of spans) if (span.book.wantsNext(nowMs)) span.book.nextDue();
    return place(group, this.places, this.shifts, NO_BALANCES, nowMs);
  }

  /** A request decided by Redis, in the group's next call. */
  ask(group: Group, cost: number): Promise<Decision> {
    return new Promise((resolve, reject) => {
      group.waiting.push({ cost, resolve, reject });
      this.schedule(group);
    });
  }

  /** Whether a call of `group` is due at the end of this turn (made so when it can be). */
  schedule(group: Group): boolean {
    if (group.scheduled) return true;
    // Requests arriving while others wait for a reclaim, or for a lease, go with them.
    if (group.leaseCalls > 0 || group.held.length > 0) return false;
    group.scheduled = true;
    // setImmediate runs once the loop has read every socket that was ready: all of this turn's requests.
    if (this.due.length === 0) setImmediate(this.sendDue);
    this.due.push(group);
    return true;
  }

  /**
   * One script call for the group's waiting requests, with what this replica settles for each of its
   * spans (leases it is done with, their unused units) and, for busy ones, new leases.
   */
  private async send(group: Group): Promise<void> {
    // Redis' marker is known before this replica takes places there: places taken under a marker it
    // has not read could not be put back after Redis restarts empty (recovery/redis-marker.ts).
    const reading = this.recovery.untilMarkerRead();
    if (reading !== undefined) await reading;
    const now = this.clock();
    // Redis lost keys: until every replica has put back its own, its requests wait.
    const hold = this.recovery.holdMs();
    if (hold > 0) {
      this.holdFor(group, hold);
      return;
    }
    const waiting = group.waiting;
    group.waiting = [];
    const canLease = group.leases && this.reclaim.canLease();
    const spans = group.spans;
    const calls: LeaseCall[] = [];
    let leasing = false;
    let settling = false;
    for (const span of spans) {
      const call = span.book.startCall(now, canLease);
      calls.push(call);
      if (call.lease > 0) leasing = true;
      if (call.settled > 0) settling = true;
    }
    if (waiting.length === 0 && !leasing && !settling) return; // nothing to ask or tell
    const placeTerms = this.pools.callTerms(group, this.reclaim.canLease(), waiting.length, now);
    const known = spans.flatMap((span) => span.counts.map((_, j) => this.recovery.knownOf(span, j, now)));
    const balances = spans.map(
      (span) =>
        span.balance && {
          terms: balanceTerms(span.balance, now),
          seen: this.recovery.balanceSeen(span.balanceKey!),
        },
    );
    group.callsInFlight++;
    if (leasing) group.leaseCalls++;
    for (let s = 0; s < spans.length; s++) {
      spans[s]!.callsInFlight++;
      spans[s]!.returning += calls[s]!.returned;
    }
    const runs = runsOf(waiting);
    // Places this call takes are not in the replica's own count of them until it is answered.
    const answered = group.placeCounts.length > 0 ? this.recovery.callOut(group.placeCounts) : undefined;
    let reply: ConsumeReply;
    try {
      reply = await this.watches.measure('consume', () =>
        this.consumeScript(group.keys, {
          now,
          reclaimChannel: this.reclaim.channel,
          leases: calls,
          limits: group.limits,
          known,
          places: placeTerms,
          balances,
          runs,
        }),
      );
    } catch (err) {
      // The call may still have run (a timeout): settling or returning again could count units
      // twice, so they are dropped: unsettled units only make others wait up to RECLAIM_WAIT_MS
      // longer, and units not given back are counted as used.
      for (const w of waiting) w.reject(err);
      answered?.(false);
      this.answered(group, calls, leasing);
      return;
    }
    const lost = lostOf(reply, known.length);
    if (lost !== undefined) {
      // Nothing was decided or settled: the requests ask again once what was lost is put back.
      group.held.push(...waiting);
      for (let s = 0; s < spans.length; s++) spans[s]!.book.notRun(calls[s]!);
      this.pools.notRun(group.keys, placeTerms);
      answered?.(true);
      this.answered(group, calls, leasing);
      const found = {
        counts: lost.limits.map((i) => group.keys[2 * i]!),
        balances: lost.balances.map((k) => group.keys[2 * known.length + k]!),
      };
      void this.recovery.found(found, now).then(() => this.holdFor(group, this.recovery.holdMs()));
      return;
    }
    this.decide(group, calls, waiting, runs, reply, now);
    answered?.(true);
    this.answered(group, calls, leasing);
  }

  /** The group's requests wait `ms`, then ask again. */
  private holdFor(group: Group, ms: number): void {
    group.held.push(...group.waiting);
    group.waiting = [];
    setTimeout(() => this.retryHeld(group), ms);
  }

  /** Resolves, holds or refuses the requests of a call from Redis' reply, and tells each span's book. */
  private decide(
    group: Group,
    calls: readonly LeaseCall[],
    waiting: readonly Waiter[],
    runs: readonly number[],
    reply: ConsumeReply,
    now: number,
  ): void {
    const spans = group.spans;
    const layout: ReplyLayout = {
      limits: (group.keys.length - group.balances) / 2,
      subjects: spans.length,
      balances: group.balances,
    };
    let admittedUnits = 0;
    let requests = 0;
    let largestRefused = 0;
    for (let r = 0; r < runs.length; r += 2) {
      const admitted = admittedOf(reply, layout, r / 2);
      requests += admitted;
      admittedUnits += admitted * runs[r + 1]!;
      if (admitted < runs[r]!) largestRefused = Math.max(largestRefused, runs[r + 1]!);
    }
    // Per span: the place before its first admitted unit, and what its book learns; per balance, what it held.
    const before = this.bases;
    const balances: CalledBalance[] = [];
    const buckets: number[] = [];
    for (let s = 0, i = 0; s < spans.length; s++) {
      const span = spans[s]!;
      if (span.balanceKey !== undefined) {
        const b = balanceOf(reply, layout, balances.length);
        this.recovery.balanceLeft(span.scope, span.id, span.balanceKey, b);
        balances.push({
          span,
          epoch: b.epoch,
          window: b.window,
          granted: b.granted,
          spentBefore: b.spent - admittedUnits,
          refused: false,
        });
      }
      if (span.limits.length === 0) continue;
      const first = i;
      const leased = leasedOf(reply, layout, s);
      let room = Infinity;
      for (let j = 0; j < span.limits.length; j++, i++) {
        const limit = span.consumeLimits[j]!;
        const rule = span.limits[j]!;
        if (inWindows(limit)) {
          const resetOf = TWIN_OF[limit.algorithm].resetOf;
          if (resetOf !== undefined) span.resets[j] = resetOf(rule, oldestSlotOf(reply, i));
          this.recovery.windowTaken(
            span.counts[j]!,
            slotOf(limit),
            admittedUnits + leased - calls[s]!.returned,
            limit.expiresAt,
          );
        } else if (isConcurrency(rule)) {
          const [key, after] = [span.counts[j]!, (span.placesAfter[j] = countOf(reply, i))];
          const granted = this.pools.answered(key, placesLeasedOf(reply, i), after, requests, now);
          this.recovery.placesLeft(key, after, requests + granted > 0, now);
          span.resets[j] = now + PLACE_RETRY_MS;
        } else {
          const { parts } = bucketPartsOf(reply, i);
          span.resets[j] = tokenBucket.resetMs(bucketOf(rule, countOf(reply, i), parts, now), rule, now, 1);
          buckets.push(s, j, i);
        }
        room = Math.min(room, limit.limit - countOf(reply, i));
      }
      const count = countOf(reply, first);
      const shifts = shiftsOf(reply, first, span.limits.length);
      this.shifts[s] = shifts;
      before[s] = count - leased - admittedUnits;
      span.book.answered(calls[s]!, { leased, count, shifts, short: room < largestRefused });
    }
    bucketsLeft(this.recovery, spans, buckets, reply, now);
    // The first requests of each run are in, with the units after those of the requests before them.
    const refused: Waiter[] = [];
    let units = 0;
    for (let r = 0, w = 0; r < runs.length; r += 2) {
      const admitted = admittedOf(reply, layout, r / 2);
      for (let k = 0; k < runs[r]!; k++) {
        const waiter = waiting[w++]!;
        if (k >= admitted) {
          refused.push(waiter);
          continue;
        }
        units += runs[r + 1]!;
        for (let s = 0; s < spans.length; s++) this.places[s] = before[s]! + units;
        const after = balances.map(({ span, granted, spentBefore }) =>
          balanceStateOf(span.scope, span.balance!, granted - spentBefore - units, now),
        );
        waiter.resolve(place(group, this.places, this.shifts, after, now));
      }
    }
    if (heldOf(reply)) {
      // Units leased elsewhere are on their way back: these ask again shortly, in arrival order.
      group.held.push(...refused);
      const retryMs = group.retryMs;
      group.retryMs = Math.min(2 * retryMs, LAST_RETRY_MS);
      setTimeout(() => this.retryHeld(group), retryMs);
    } else {
      let decision: Decision | undefined;
      let decidedCost = 0;
      for (const waiter of refused) {
        if (waiter.cost !== decidedCost) {
          decidedCost = waiter.cost;
          decision = refusalAfter(group, reply, balances, units, decidedCost, now);
        }
        waiter.resolve(decision!);
      }
      group.retryMs = FIRST_RETRY_MS;
    }
    if (this.creditWatch !== undefined)
      for (const b of balances)
        this.creditWatch.saw(
          b.span.scope,
          b.span.id,
          b.span.balance!,
          b,
          b.granted - b.spentBefore - units,
          b.refused,
          now,
        );
  }

  /** After a call: requests that waited for a lease take its units, the rest ask Redis. */
  private answered(group: Group, calls: readonly LeaseCall[], leasing: boolean): void {
    const spans = group.spans;
    group.callsInFlight--;
    if (leasing) group.leaseCalls--;
    for (let s = 0; s < spans.length; s++) {
      spans[s]!.callsInFlight--;
      spans[s]!.returning -= calls[s]!.returned;
      spans[s]!.book.ended(calls[s]!);
    }
    const waiting = group.waiting;
    const now = this.clock();
    let served = 0;
    while (group.leases && served < waiting.length) {
      const { cost } = waiting[served]!;
      if (!spans.every((span) => span.book.fits(cost, now))) break;
      waiting[served++]!.resolve(this.takeLeased(group, cost, now));
    }
    if (served > 0) group.waiting = waiting.slice(served);
    let settle = false;
    for (const span of spans) if (span.book.settleIfExhausted()) settle = true;
    if (settle || group.waiting.length > 0) this.schedule(group);
  }

  private retryHeld(group: Group): void {
    group.waiting = group.held.concat(group.waiting);
    group.held = [];
    this.schedule(group);
  }
}

/** A leased decision charges no balance (a group with one is never leased). */
const NO_BALANCES: readonly BalanceState[] = [];
