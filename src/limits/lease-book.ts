import { countOf, NO_SHIFTS, shiftsOf, type ConsumeReply } from './consume-script.js';

/** A lease's places are used within this long or given back. */
export const LEASE_MS = 100;
/** A lease holds about this long's worth of a key's requests on this replica. */
const LEASE_HORIZON_MS = 20;
const MAX_LEASE = 1_000;

/**
 * Places `next`…`last` of the first limit's count, this replica's to hand out until `endsAt`; the
 * same place of limit i is `shifts[i]` further on (a lease takes the same number of places, at once,
 * in every limit of the plan).
 */
interface Lease {
  next: number;
  readonly last: number;
  readonly endsAt: number;
  readonly size: number;
  readonly shifts: readonly number[];
}

/** What one call to Redis asks and tells for a counter. */
export interface LeaseCall {
  /** When it was sent: a lease it brings runs from then. */
  readonly sentAt: number;
  /** Places asked for ahead of requests. */
  readonly lease: number;
  /** Places of leases this replica is done with, used or not. */
  readonly settled: number;
  /** Of those, the ones it did not use. */
  readonly returned: number;
}

/**
 * One window of one key's plan on this replica (the span where the windows of all its limits stay the
 * same): the places leased to it, which requests take without a call, and what it owes Redis for
 * leases it is done with. No I/O and no clock of its own: every method takes `now` from the caller,
 * the same clock that picks the window. docs/decisions/0006.
 */
export class LeaseBook {
  private lease: Lease | undefined;
  /** The next lease, asked for while `lease` still had places so that requests never wait for it. */
  private spare: Lease | undefined;
  /** Places of leases this replica is done with that Redis still counts as outstanding. */
  private settleable = 0;
  /** Unused places of leases that ended, to give back with the next call. */
  private toReturn = 0;
  /** No more leases in this window: it ran low or out, or another replica asked for places back. */
  private exhausted = false;
  /** Requests seen since the last answer, and when the call that got it was sent: what a lease is sized by. */
  private demand = 0;
  private answeredAt = -Infinity;
  /** When the latest request came. */
  private seenAt = -Infinity;
  private leaseAsked = false;
  /** The shifts of the lease that gave the last place. */
  private lastShifts: readonly number[] = NO_SHIFTS;

  /** Where the last place `take` or `next` gave stands in limit i: that place plus `shifts[i]`. */
  get shifts(): readonly number[] {
    return this.lastShifts;
  }

  /** A request: its place in the first limit's count from a running lease, or 0 when it has to ask Redis. */
  take(now: number): number {
    this.demand++;
    this.seenAt = now;
    return this.next(now);
  }

  /** A place for a request that waited for a call, or 0. */
  next(now: number): number {
    for (let lease = this.lease; lease !== undefined; lease = this.endLease()) {
      if (lease.next <= lease.last && now < lease.endsAt) {
        this.lastShifts = lease.shifts;
        return lease.next++;
      }
    }
    return 0;
  }

  /** A call that asked for a lease is out: requests wait for it instead of sending their own. */
  get leaseInFlight(): boolean {
    return this.leaseAsked;
  }

  /** Half the current lease is used and no next one is coming: time to ask, before it runs out. */
  get wantsNext(): boolean {
    const lease = this.lease;
    return lease !== undefined && this.spare === undefined && !this.exhausted && lease.last - lease.next < lease.size / 2;
  }

  /** Leases ended and not yet settled with Redis. */
  get owes(): boolean {
    return this.settleable > 0 || this.toReturn > 0;
  }

  /**
   * Starts a call: what it settles (handed over, so a call that fails does not settle them twice)
   * and, for a busy key when `canLease` (someone could ask for the places back), a lease the size of
   * the key's requests since the last answer over the next 20 ms. None for a key not seen within a
   * lease's time, none once the window ran low, none while another lease is on its way.
   */
  startCall(now: number, canLease: boolean): LeaseCall {
    let lease = 0;
    const elapsed = now - this.answeredAt;
    if (canLease && !this.exhausted && !this.leaseAsked && elapsed <= LEASE_MS) {
      lease = Math.min(MAX_LEASE, Math.floor((this.demand * LEASE_HORIZON_MS) / Math.max(1, elapsed)));
    }
    const call: LeaseCall = { sentAt: now, lease, settled: this.settleable, returned: this.toReturn };
    this.settleable = 0;
    this.toReturn = 0;
    if (lease > 0) this.leaseAsked = true;
    return call;
  }

  /** Redis answered `call`, asked for `want` requests. */
  answered(call: LeaseCall, want: number, reply: ConsumeReply): void {
    const [admitted, leased] = reply;
    if (leased > 0) {
      const count = countOf(reply, 0);
      const lease: Lease = { next: count - leased + 1, last: count, endsAt: call.sentAt + LEASE_MS, size: leased, shifts: shiftsOf(reply) };
      const current = this.lease;
      if (current === undefined || current.next > current.last || call.sentAt >= current.endsAt) this.endLease();
      if (this.lease === undefined) this.lease = lease;
      else if (this.spare === undefined) this.spare = lease;
      else this.giveBack(lease); // no room: never lose places, whatever order calls answer in
    } else if (admitted < want || call.lease > 0) {
      // Refused, or too little left to lease: the rest of the window is decided call by call.
      this.exhausted = true;
    }
    this.demand = 0;
    this.answeredAt = call.sentAt;
  }

  /** `call` is over, answered or failed: another lease may be asked for. */
  ended(call: LeaseCall): void {
    if (call.lease > 0) this.leaseAsked = false;
  }

  /**
   * Once requests that waited took their places: a reclaim that came while a lease was on its way
   * sends its unused places straight back. True when there is something to settle.
   */
  settleIfExhausted(): boolean {
    if (!this.exhausted) return false;
    this.endLeases();
    return this.owes;
  }

  /** Another replica needs places of this window: give back what is unused, take no more leases. */
  reclaim(): void {
    this.exhausted = true;
    this.endLeases();
  }

  /** True, with its leases ended, when the key has not been seen for a lease's time. */
  endIfQuiet(now: number): boolean {
    if (now - this.seenAt <= LEASE_MS) return false;
    this.endLeases();
    return true;
  }

  /** The current lease is done: its unused places go back with the next call; the spare takes over. */
  private endLease(): Lease | undefined {
    if (this.lease !== undefined) this.giveBack(this.lease);
    this.lease = this.spare;
    this.spare = undefined;
    return this.lease;
  }

  private giveBack(lease: Lease): void {
    if (lease.next <= lease.last) this.toReturn += lease.last - lease.next + 1;
    this.settleable += lease.size;
  }

  private endLeases(): void {
    while (this.endLease() !== undefined);
  }
}
