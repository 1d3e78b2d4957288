import fc from 'fast-check';
import { NO_SHIFTS } from '../../src/limits/consume-reply.js';
import {
  BUCKET_LEASES,
  BUCKET_PAUSE_MS,
  LEASE_MS,
  LeaseBook,
  WINDOW_LEASES,
  type LeaseCall,
  type LeaseTimes,
} from '../../src/limits/lease-book.js';

/** How long a window's lease lasts. */
const LIFE = WINDOW_LEASES.lifeMs;

/** Redis' side of one call for a subject of one limit: `leased` units on top of a count that was `before`. */
function grant(book: LeaseBook, call: LeaseCall, before: number, leased: number, admitted = 0): void {
  book.answered(call, { leased, count: before + admitted + leased, shifts: NO_SHIFTS, short: false });
  book.ended(call);
}

/** A request of `cost` units: the place of its last unit from a running lease, or 0 when it has to ask Redis. */
function take(book: LeaseBook, now: number, cost = 1): number {
  return book.offer(cost, now) ? book.take(cost) : 0;
}

/** A book that was answered at `t0` and then saw `requests` requests by `t1`: it asks for a lease at `t1`. */
function busyBook(t0: number, requests: number, t1: number, times?: LeaseTimes): LeaseBook {
  const book = new LeaseBook(times);
  take(book, t0);
  grant(book, book.startCall(t0, true), 0, 0, 1);
  for (let i = 0; i < requests; i++) expect(take(book, t1)).toBe(0);
  return book;
}

describe('LeaseBook', () => {
  it('sends every request of a subject it has not seen busy to Redis, and asks for no lease', () => {
    const book = new LeaseBook();
    expect(take(book, 1_000)).toBe(0);
    expect(book.startCall(1_000, true)).toEqual({
      sentAt: 1_000,
      lease: 0,
      settled: 0,
      returned: 0,
      ended: [],
    });
  });

  it('sizes a lease by the requests since the last answer: 20 ms of them, or up to 64 they would use within a lease’s life, at most 1,000', () => {
    expect(busyBook(0, 100, 5).startCall(5, true).lease).toBe(400);
    expect(busyBook(0, 500, 5).startCall(5, true).lease).toBe(1_000);
    // 2 a ms: 40 in 20 ms, and the lease would hold 64 within its time.
    expect(busyBook(0, 10, 5).startCall(5, true).lease).toBe(64);
    // 1 in 100 ms: 10 within a window's lease's second, no more (the rest would only go back); a
    // token bucket's lease lasts LEASE_MS.
    expect(busyBook(0, 3, 300).startCall(300, true).lease).toBe(10);
    expect(busyBook(0, 3, 30, BUCKET_LEASES).startCall(30, true).lease).toBe(10);
    // Nobody could ask for the places back, or the key was not answered within a lease's life.
    expect(busyBook(0, 10, 5).startCall(5, false).lease).toBe(0);
    expect(busyBook(0, 10, 5).startCall(LIFE + 1, true).lease).toBe(0);
  });

  it('asks for one lease at a time', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 4);
    expect([take(book, 6), take(book, 6)]).toEqual([1, 2]);
    expect(book.wantsNext(6)).toBe(true);
    // A call that will ask is due: the other decisions sharing this book (a consumer's keys) send none.
    book.nextDue();
    expect(book.wantsNext(6)).toBe(false);
    const next = book.startCall(6, true);
    expect(next.lease).toBeGreaterThan(0);
    // Nor while that lease is on its way.
    expect(book.wantsNext(6)).toBe(false);
    expect(book.startCall(6, true).lease).toBe(0);
    book.ended(next);
    expect(book.startCall(6, true).lease).toBeGreaterThan(0);
  });

  it('asks for the next lease of one sized to last its whole time only when a quarter of its time is left', () => {
    // 1 request every 100 ms: a lease of 10 units, used at that pace, lasts all of its second.
    const book = busyBook(0, 3, 300);
    const call = book.startCall(300, true);
    grant(book, call, 100, call.lease);
    expect(call.lease).toBe(10);
    for (let at = 400; at < 300 + 0.75 * LIFE; at += 100) {
      expect(take(book, at)).toBeGreaterThan(0);
      expect(book.wantsNext(at)).toBe(false);
    }
    expect(take(book, 300 + 0.75 * LIFE)).toBeGreaterThan(0);
    expect(book.wantsNext(300 + 0.75 * LIFE)).toBe(true);
  });

  it('asks for the next lease once half of it is used when, at the pace so far, it runs out before it ends', () => {
    const book = busyBook(0, 3, 300);
    const call = book.startCall(300, true);
    grant(book, call, 100, call.lease);
    // Half of its units within a tenth of its time.
    for (let i = 0; i < 4; i++) take(book, 400);
    expect(book.wantsNext(400)).toBe(false);
    take(book, 400);
    expect(book.wantsNext(400)).toBe(true);
  });

  it('asks for no lease while a spare waits: it would only go back', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 4);
    grant(book, book.startCall(5, true), 50, 4);
    expect(take(book, 6)).toBe(1);
    expect(book.startCall(6, true).lease).toBe(0);
  });

  it('hands out a lease’s places in order until it is used up, asking for the next one at half', () => {
    const book = busyBook(0, 10, 5);
    const call = book.startCall(5, true);
    grant(book, call, 100, 4);
    expect(take(book, 6)).toBe(101);
    expect(book.wantsNext(6)).toBe(false);
    expect(take(book, 6)).toBe(102);
    expect(book.wantsNext(6)).toBe(true);
    expect([take(book, 6), take(book, 6), take(book, 6)]).toEqual([103, 104, 0]);
    // All used: settled with the next call, nothing to give back.
    expect(book.startCall(7, false)).toMatchObject({ settled: 4, returned: 0 });
  });

  it('ends a lease its life after the call that brought it was sent, on the caller’s clock: a window’s second, a token bucket’s LEASE_MS', () => {
    for (const times of [WINDOW_LEASES, BUCKET_LEASES]) {
      const book = busyBook(0, 10, 5, times);
      grant(book, book.startCall(5, true), 0, 10);
      expect(take(book, 5 + times.lifeMs - 1)).toBe(1);
      expect(take(book, 5 + times.lifeMs)).toBe(0);
      expect(book.startCall(5 + times.lifeMs, false)).toMatchObject({ settled: 10, returned: 9 });
    }
  });

  it('keeps a lease that arrives while the current one runs as the spare, used once the current one is', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 2);
    expect(take(book, 6)).toBe(1);
    grant(book, book.startCall(6, true), 50, 3);
    expect(book.wantsNext(6)).toBe(false);
    expect([take(book, 7), take(book, 7), take(book, 7)]).toEqual([2, 51, 52]);
  });

  it('replaces a lease that ended before the next one came, settling it', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 3);
    expect(take(book, 6)).toBe(1);
    grant(book, book.startCall(5 + LIFE, true), 10, 3);
    expect(take(book, 5 + LIFE)).toBe(11);
    expect(book.startCall(5 + LIFE, false)).toMatchObject({ settled: 3, returned: 2 });
  });

  it('takes no more leases in a window once a call was refused or got none', () => {
    const refused = busyBook(0, 10, 5);
    const call = refused.startCall(5, true);
    refused.answered(call, { leased: 0, count: 10, shifts: NO_SHIFTS, short: true });
    refused.ended(call);
    take(refused, 6);
    expect(refused.startCall(6, true).lease).toBe(0);

    const low = busyBook(0, 10, 5);
    grant(low, low.startCall(5, true), 0, 0, 1);
    take(low, 6);
    expect(low.startCall(6, true).lease).toBe(0);
  });

  it('gives everything unused back on a reclaim, and takes no more leases', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 8);
    grant(book, book.startCall(5, true), 8, 8);
    expect(take(book, 6)).toBe(1);
    book.reclaim();
    expect(take(book, 6)).toBe(0);
    expect(book.owes).toBe(true);
    // Each lease by itself too (a token bucket settles them so): when it was asked for, its size, its unused units.
    expect(book.startCall(6, true)).toEqual({
      sentAt: 6,
      lease: 0,
      settled: 16,
      returned: 15,
      ended: [5, 8, 7, 5, 8, 8],
    });
    expect(book.owes).toBe(false);
  });

  it('leases a token bucket again a pause after a reclaim (it refills), a window never in its span', () => {
    const bucket = busyBook(0, 10, 5, BUCKET_LEASES);
    const window = busyBook(0, 10, 5);
    for (const book of [bucket, window]) {
      grant(book, book.startCall(5, true), 0, 8);
      book.take(1);
      book.reclaim(6);
      expect(book.startCall(7, true).lease).toBe(0);
    }
    // Busy again once the pause is over (a call answered, then more requests): the bucket's book asks
    // for a lease, the window's does not.
    const later = 6 + BUCKET_PAUSE_MS;
    for (const book of [bucket, window]) {
      take(book, later);
      grant(book, book.startCall(later, true), 9, 0, 1);
      for (let i = 0; i < 10; i++) take(book, later + 1);
    }
    expect(bucket.startCall(later + 1, true).lease).toBeGreaterThan(0);
    expect(window.startCall(later + 1, true).lease).toBe(0);
  });

  it('counts as outstanding every leased unit no call has settled yet, used or not', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 8);
    expect(book.outstanding).toBe(8);
    expect(take(book, 6)).toBe(1);
    expect(book.outstanding).toBe(8);
    book.reclaim(6);
    expect(book.outstanding).toBe(8); // given back, not yet settled
    book.startCall(6, false);
    expect(book.outstanding).toBe(0);
  });

  it('gives back a lease that arrives after a reclaim, once the requests that waited for it took their places', () => {
    const book = busyBook(0, 10, 5);
    const call = book.startCall(5, true);
    book.reclaim();
    grant(book, call, 0, 8);
    expect(book.fits(1, 6)).toBe(true);
    expect(book.take(1)).toBe(1);
    expect(book.settleIfExhausted()).toBe(true);
    expect(book.startCall(6, false)).toMatchObject({ settled: 8, returned: 7 });
    expect(book.settleIfExhausted()).toBe(false);
  });

  it('hands what it settles to one call only: a call that fails does not settle them again', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 5);
    book.reclaim();
    const failed = book.startCall(6, false);
    book.ended(failed);
    expect(failed).toMatchObject({ settled: 5, returned: 5 });
    expect(book.startCall(7, false)).toMatchObject({ settled: 0, returned: 0 });
  });

  it('tells where each place it hands out stands in every limit of the plan', () => {
    const book = busyBook(0, 10, 5);
    const call = book.startCall(5, true);
    // Two limits: the first counted 100 before the lease of 4, the second 7,000.
    book.answered(call, { leased: 4, count: 104, shifts: [0, 6_900], short: false });
    book.ended(call);
    expect(take(book, 6)).toBe(101);
    expect(book.shifts).toEqual([0, 6_900]);
    const spare = book.startCall(6, true);
    book.answered(spare, { leased: 2, count: 300, shifts: [0, -50], short: false });
    book.ended(spare);
    expect([take(book, 6), take(book, 6), take(book, 6)]).toEqual([102, 103, 104]);
    expect(book.shifts).toEqual([0, 6_900]);
    expect(take(book, 6)).toBe(299);
    expect(book.shifts).toEqual([0, -50]);
  });

  it('takes a request’s cost in units, and moves on to the spare when the current lease is too short for it', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 6);
    expect(take(book, 6, 5)).toBe(5);
    grant(book, book.startCall(6, true), 50, 10);
    // One unit is left of the first lease: a cost of 5 takes the spare's, and that unit goes back.
    expect(take(book, 7, 5)).toBe(55);
    expect(take(book, 7, 1)).toBe(56);
    expect(book.startCall(7, false)).toMatchObject({ settled: 6, returned: 1 });
  });

  it('sends a request no lease holds to Redis and keeps its leases for the cheaper ones', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 4);
    expect(take(book, 6, 5)).toBe(0);
    expect([take(book, 6, 1), take(book, 6, 3)]).toEqual([1, 4]);
    expect(book.startCall(6, false)).toMatchObject({ settled: 0, returned: 0 });
  });

  it('keeps leasing when a refusal was another subject’s (its own limits had room)', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 10);
    const call = book.startCall(6, false);
    book.answered(call, { leased: 0, count: 11, shifts: NO_SHIFTS, short: false });
    book.ended(call);
    for (let i = 0; i < 9; i++) take(book, 7);
    expect(book.startCall(7, true).lease).toBeGreaterThan(0);
  });

  it('ends its leases when the key has not been seen for LEASE_MS', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 5);
    expect(book.endIfQuiet(5 + LEASE_MS)).toBe(false);
    expect(book.owes).toBe(false);
    expect(book.endIfQuiet(5 + LEASE_MS + 1)).toBe(true);
    expect(book.startCall(5 + LEASE_MS + 1, false)).toMatchObject({ settled: 5, returned: 5 });
  });
});

type Step =
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'take'; readonly cost: number }
  | { readonly kind: 'grant'; readonly places: number }
  | { readonly kind: 'settle' }
  | { readonly kind: 'reclaim' }
  | { readonly kind: 'quiet' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 60 }) }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('take' as const),
      cost: fc.oneof(fc.constant(1), fc.constant(5), fc.integer({ min: 1, max: 40 })),
    }),
    weight: 6,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('grant' as const), places: fc.integer({ min: 1, max: 30 }) }),
    weight: 2,
  },
  { arbitrary: fc.constant({ kind: 'settle' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'reclaim' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'quiet' as const }), weight: 1 },
);

describe('LeaseBook, over any sequence of requests, grants, reclaims and clock steps', () => {
  it('hands out each granted unit at most once, a request’s units from one running lease, and settles every unit with the unused ones returned', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        let now = 1_700_000_000_000;
        let count = 0;
        const book = new LeaseBook();
        /** Each granted unit's lease: its end, and which grant it came with. */
        const grantedUntil = new Map<number, number>();
        const grantOf = new Map<number, number>();
        const used = new Set<number>();
        let settled = 0;
        let returned = 0;
        const settle = (call: LeaseCall): void => {
          settled += call.settled;
          returned += call.returned;
        };
        for (const s of steps) {
          switch (s.kind) {
            case 'advance':
              now += s.ms;
              break;
            case 'take': {
              const last = take(book, now, s.cost);
              if (last === 0) break;
              // Its cost in units ending at `last`: granted together, not handed out before, their lease still running.
              for (let unit = last - s.cost + 1; unit <= last; unit++) {
                expect(grantedUntil.get(unit)).toBeGreaterThan(now);
                expect(grantOf.get(unit)).toBe(grantOf.get(last));
                expect(used.has(unit)).toBe(false);
                used.add(unit);
              }
              break;
            }
            case 'grant': {
              const call = book.startCall(now, true);
              settle(call);
              for (let p = count + 1; p <= count + s.places; p++) {
                grantedUntil.set(p, call.sentAt + LIFE);
                grantOf.set(p, count);
              }
              grant(book, call, count, s.places);
              count += s.places;
              break;
            }
            case 'settle': {
              const call = book.startCall(now, false);
              settle(call);
              book.ended(call);
              break;
            }
            case 'reclaim':
              book.reclaim();
              break;
            case 'quiet':
              book.endIfQuiet(now);
              break;
          }
        }
        book.reclaim();
        settle(book.startCall(now, false));
        expect(used.size).toBeLessThanOrEqual(grantedUntil.size);
        expect(settled).toBe(grantedUntil.size);
        expect(returned).toBe(grantedUntil.size - used.size);
        expect(book.owes).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('hands out nothing once its leases ran out on the caller’s clock', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        (places, after) => {
          const book = busyBook(0, 10, 5);
          grant(book, book.startCall(5, true), 0, places);
          expect(take(book, 5 + LIFE + after)).toBe(0);
          expect(book.startCall(5 + LIFE + after, false)).toMatchObject({
            settled: places,
            returned: places,
          });
        },
      ),
    );
  });
});
