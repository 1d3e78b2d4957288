import { NO_SHIFTS } from './consume-reply.js';

/** A subject not seen for this long is quiet; a token bucket's leases last this long (BUCKET_LEASES). */
export const LEASE_MS = 100;
/** A lease holds about this long's worth of a subject's units on this replica… */
const LEASE_HORIZON_MS = 20;
/**
 * …or, for a subject less busy, up to this many units it would use within a lease's life: a decision needs
 * every book of its subjects to hold its cost, and a consumer's keys, each busy in part, would each
 * call Redis every 20 ms / 2 or so (docs/decisions/0025: at most 0.05 calls per request for a consumer of 10 keys
 * on 2 replicas). 64 is a sixteenth of the 1,024 units a count must hold to lease at all.
 */
const MIN_BUSY_LEASE = 64;
const MAX_LEASE = 1_000;
/**
 * A token bucket counts a replica's leased units as outstanding until this long after its latest lease
 * ended, then as used (core/token-bucket.lua.ts): a live replica settles within its next call or the
 * sweep's second; one that died takes its units out of the bucket for no longer than this.
 */
export const BUCKET_LAPSE_MS = 3_000;
/** A token bucket's book that ran low or was asked for units back leases again after this long. */
export const BUCKET_PAUSE_MS = 1_000;

/** How long a book's leases last, by the kind of its counts. */
export interface LeaseTimes {
  readonly lifeMs: number;
  /**
   * How long a book stays without leases once it ran low or was asked for units back: a window's for
   * the rest of its span, a token bucket's (which refills) for BUCKET_PAUSE_MS.
   */
  readonly pauseMs: number;
}

/**
 * A span of windows': each unit counts in the span's windows (or slots) whenever it is used, so a lease
 * may last a second (a subject less busy then calls Redis a few times a second, not ten), and a book
 * that ran low leases no more in its span.
 */
export const WINDOW_LEASES: LeaseTimes = { lifeMs: 1_000, pauseMs: Infinity };
/** A token bucket's: the bucket counts a lease's units as outstanding only until LEASE_MS + BUCKET_LAPSE_MS after it (core/token-bucket.lua.ts). */
export const BUCKET_LEASES: LeaseTimes = { lifeMs: LEASE_MS, pauseMs: BUCKET_PAUSE_MS };

/**
 * Units `next`…`last` of the subject's first limit's count, this replica's to hand out until `endsAt`;
 * the same unit of limit i is `shifts[i]` further on (a lease takes the same number of units, at once,
 * in every limit of the subject).
 */
interface Lease {
  /** When the call that brought it was sent. */
  readonly sentAt: number;
  next: number;
  readonly last: number;
  readonly endsAt: number;
  readonly size: number;
  readonly shifts: readonly number[];
}

/** What a consume call (consume-script.ts) asks and settles for one subject's lease book (LeaseCall). */
export interface LeaseTerms {
  /** Units asked for ahead of requests, in each of the subject's limits. */
  readonly lease: number;
  /** Units of leases the caller is done with, used or not. */
  readonly settled: number;
  /** Of those, the ones it did not use. */
  readonly returned: number;
  /** The same leases one by one, as a token bucket settles them: when each was asked for, its size, its unused units, … */
  readonly ended?: readonly number[];
}

/** What one call to Redis asks and tells for a lease book. */
export interface LeaseCall extends LeaseTerms {
  /** When it was sent: a lease it brings runs from then. */
  readonly sentAt: number;
}

/** What Redis answered a call for one subject. */
export interface LeaseAnswer {
  /** Units leased (the last ones of each of the subject's counts), 0 for none. */
  readonly leased: number;
  /** The subject's first limit's count after the call. */
  readonly count: number;
  /** Each of the subject's limits' count less the first's. */
  readonly shifts: readonly number[];
  /** A request of the call did not fit a limit of this subject. */
  readonly short: boolean;
}

/**
 * One span of one subject's limits on this replica (the stretch where the windows of all its limits
 * stay the same): the units leased to it, which requests take without a call, and what it owes Redis
 * for leases it is done with. Every decision that charges the subject uses the same book (the keys of
 * a consumer share the consumer's), and a request is decided here only when every book of its decision
 * holds its cost. No I/O and no clock of its own: every method takes `now` from the caller, the same
 * clock that picks the window. docs/decisions/0006 and 0025.
 */
export class LeaseBook {
  constructor(private readonly times: LeaseTimes = WINDOW_LEASES) {}

  private lease: Lease | undefined;
  /** The next lease, asked for while `lease` still had units so that requests never wait for it. */
  private spare: Lease | undefined;
  /** Units of leases this replica is done with that Redis still counts as outstanding. */
  private settleable = 0;
  /** Unused units of leases that ended, to give back with the next call. */
  private toReturn = 0;
  /** The same leases one by one (LeaseTerms.ended): when each was asked for, its size, its unused units, … */
  private toSettle: number[] = [];
  /** No more leases in this span until `exhaustedUntil`: it ran low or out, or another replica asked for units back. */
  private exhausted = false;
  private exhaustedUntil = -Infinity;
  /** Units asked for since the last answer, and when the call that got it was sent: what a lease is sized by. */
  private demand = 0;
  private answeredAt = -Infinity;
  /** When the latest request came. */
  private seenAt = -Infinity;
  private leaseAsked = false;
  /** A call that will ask for the next lease is due: the other decisions sharing this book need not send one. */
  private leaseDue = false;
  /** The shifts of the lease that gave the last units. */
  private lastShifts: readonly number[] = NO_SHIFTS;

  /** Where the last unit `take` gave stands in limit i: that unit plus `shifts[i]`. */
  get shifts(): readonly number[] {
    return this.lastShifts;
  }

  /** A request of `cost` units: counted in the demand leases are sized by; true when a running lease holds it. */
  offer(cost: number, now: number): boolean {
    if (this.exhausted && now >= this.exhaustedUntil) this.exhausted = false;
    this.demand += cost;
    this.seenAt = now;
    return this.fits(cost, now);
  }

  /**
   * Whether a running lease holds `cost` units, making it the current one: a lease that ran out or
   * ended is done with, and so is one too short for the cost when the spare holds it (its rest goes
   * back). Nothing is taken: a request takes its units only once every book of its decision holds them.
   */
  fits(cost: number, now: number): boolean {
    for (let lease = this.lease; lease !== undefined; lease = this.endLease()) {
      if (lease.next > lease.last || now >= lease.endsAt) continue;
      if (lease.last - lease.next + 1 >= cost) return true;
      const spare = this.spare;
      if (spare === undefined || now >= spare.endsAt || spare.last - spare.next + 1 < cost) return false;
    }
    return false;
  }

  /** Takes `cost` units of the current lease, which `fits` just found to hold them: the last one's place in the first limit's count. */
  take(cost: number): number {
    const lease = this.lease!;
    lease.next += cost;
    this.lastShifts = lease.shifts;
    return lease.next - 1;
  }

  /**
   * Whether `refund(units)` can give units back now: a lease runs (its unused units not counted yet)
   * that has handed out at least `units`, so that it never has more unused units than it was leased.
   */
  canRefund(units: number): boolean {
    const lease = this.lease;
    return lease !== undefined && lease.next - (lease.last - lease.size + 1) >= units;
  }

  /**
   * Gives back `units` that a request counted in this book's span did not use (its response reported
   * less than it reserved), when `canRefund`: the current lease's next unit moves back by them, so later
   * requests take them, or they go back to Redis with its other unused units. Any running lease of the
   * book will do: each of its units is counted in the same windows (or bucket), and what the count ends
   * at is what the leases gave out less what came back (docs/decisions/0225).
   */
  refund(units: number): void {
    this.lease!.next -= units;
  }

  /**
   * No next lease is on its way or due, and the current one will be done soon: half of it is used and,
   * at the pace so far, the rest runs out before it ends, or a quarter of its time is left. A lease
   * sized to last its whole time asks late, so the next one's time is not spent waiting beside it.
   */
  wantsNext(now: number): boolean {
    const lease = this.lease;
    if (lease === undefined || this.spare !== undefined || this.exhausted || this.leaseAsked || this.leaseDue)
      return false;
    if (now >= lease.endsAt - this.times.lifeMs / 4) return true;
    const left = lease.last - lease.next + 1;
    const used = lease.size - left;
    return left - 1 < lease.size / 2 && left * (now - lease.sentAt) < used * (lease.endsAt - now);
  }

  /** A call that will ask for the next lease is due (`wantsNext` was acted on). */
  nextDue(): void {
    this.leaseDue = true;
  }

  /** Leases ended and not yet settled with Redis. */
  get owes(): boolean {
    return this.settleable > 0 || this.toReturn > 0;
  }

  /** Units leased to this book that no call has settled yet, used or not (what Redis counts as outstanding for it). */
  get outstanding(): number {
    return (this.lease?.size ?? 0) + (this.spare?.size ?? 0) + this.settleable;
  }

  /**
   * Starts a call: what it settles (handed over, so a call that fails does not settle them twice)
   * and, for a busy subject when `canLease` (someone could ask for the units back), a lease the size
   * of its demand since the last answer over the next 20 ms, or, if more, over the lease's life up to
   * MIN_BUSY_LEASE. None when the last answer is older than a lease's life, none once the span ran low,
   * none while another lease is on its way or a spare is waiting.
   */
  startCall(now: number, canLease: boolean): LeaseCall {
    let lease = 0;
    const elapsed = now - this.answeredAt;
    this.leaseDue = false;
    if (this.exhausted && now >= this.exhaustedUntil) this.exhausted = false;
    if (
      canLease &&
      !this.exhausted &&
      !this.leaseAsked &&
      this.spare === undefined &&
      elapsed <= this.times.lifeMs
    ) {
      const perMs = this.demand / Math.max(1, elapsed);
      lease = Math.min(
        MAX_LEASE,
        Math.floor(Math.max(perMs * LEASE_HORIZON_MS, Math.min(MIN_BUSY_LEASE, perMs * this.times.lifeMs))),
      );
    }
    const call: LeaseCall = {
      sentAt: now,
      lease,
      settled: this.settleable,
      returned: this.toReturn,
      ended: this.toSettle,
    };
    this.settleable = 0;
    this.toReturn = 0;
    if (this.toSettle.length > 0) this.toSettle = [];
    if (lease > 0) this.leaseAsked = true;
    return call;
  }

  /** Redis answered `call`. */
  answered(call: LeaseCall, { leased, count, shifts, short }: LeaseAnswer): void {
    if (leased > 0) {
      const lease: Lease = {
        sentAt: call.sentAt,
        next: count - leased + 1,
        last: count,
        endsAt: call.sentAt + this.times.lifeMs,
        size: leased,
        shifts,
      };
      const current = this.lease;
      if (current === undefined || current.next > current.last || call.sentAt >= current.endsAt)
        this.endLease();
      if (this.lease === undefined) this.lease = lease;
      else if (this.spare === undefined) this.spare = lease;
      else this.giveBack(lease); // no room: never lose units, whatever order calls answer in
    } else if (short || call.lease > 0) {
      // Too little left for a request, or to lease: the rest of the span is decided call by call.
      this.exhaust(call.sentAt);
    }
    this.demand = 0;
    this.answeredAt = call.sentAt;
  }

  /** `call` is over, answered or failed: another lease may be asked for. */
  /** Redis did not run `call` (it found keys lost): what it settled goes with the next call. */
  notRun(call: LeaseCall): void {
    this.settleable += call.settled;
    this.toReturn += call.returned;
    if (call.ended !== undefined) this.toSettle.push(...call.ended);
  }

  ended(call: LeaseCall): void {
    if (call.lease > 0) this.leaseAsked = false;
  }

  /**
   * Once requests that waited took their units: a reclaim that came while a lease was on its way
   * sends its unused units straight back. True when there is something to settle.
   */
  settleIfExhausted(): boolean {
    if (!this.exhausted) return false;
    this.endLeases();
    return this.owes;
  }

  /** Another replica needs units of this span at `now`: give back what is unused, take no more leases (for a while). */
  reclaim(now = 0): void {
    this.exhaust(now);
    this.endLeases();
  }

  private exhaust(now: number): void {
    this.exhausted = true;
    this.exhaustedUntil = now + this.times.pauseMs;
  }

  /** True, with its leases ended, when the subject has not been seen for a lease's time. */
  endIfQuiet(now: number): boolean {
    if (now - this.seenAt <= LEASE_MS) return false;
    this.endLeases();
    return true;
  }

  /** The current lease is done: its unused units go back with the next call; the spare takes over. */
  private endLease(): Lease | undefined {
    if (this.lease !== undefined) this.giveBack(this.lease);
    this.lease = this.spare;
    this.spare = undefined;
    return this.lease;
  }

  private giveBack(lease: Lease): void {
    const unused = lease.next <= lease.last ? lease.last - lease.next + 1 : 0;
    this.toReturn += unused;
    this.settleable += lease.size;
    this.toSettle.push(lease.sentAt, lease.size, unused);
  }

  private endLeases(): void {
    while (this.endLease() !== undefined);
  }
}

/** Gives `units` back to the book of every span, if each can take them now (else to none). */
export function refunded(spans: readonly { readonly book: LeaseBook }[], units: number): boolean {
  for (const { book } of spans) if (!book.canRefund(units)) return false;
  for (const { book } of spans) book.refund(units);
  return true;
}
