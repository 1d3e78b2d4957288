import fc from 'fast-check';
import { LEASE_MS, LeaseBook, type LeaseCall } from '../../src/limits/lease-book.js';

/** Redis' side of one call for a plan of one limit: `leased` places on top of a count that was `before`. */
function grant(book: LeaseBook, call: LeaseCall, before: number, leased: number, want = 0): void {
  book.answered(call, want, [want, leased, 0, before + want + leased, 0]);
  book.ended(call);
}

/** A book that was answered at `t0` and then saw `requests` requests by `t1`: it asks for a lease at `t1`. */
function busyBook(t0: number, requests: number, t1: number): LeaseBook {
  const book = new LeaseBook();
  book.take(t0);
  grant(book, book.startCall(t0, true), 0, 0, 1);
  for (let i = 0; i < requests; i++) expect(book.take(t1)).toBe(0);
  return book;
}

describe('LeaseBook', () => {
  it('sends every request of a key it has not seen busy to Redis, and asks for no lease', () => {
    const book = new LeaseBook();
    expect(book.take(1_000)).toBe(0);
    expect(book.startCall(1_000, true)).toEqual({ sentAt: 1_000, lease: 0, settled: 0, returned: 0 });
  });

  it('sizes a lease by the requests since the last answer, scaled to 20 ms, at most 1,000', () => {
    expect(busyBook(0, 10, 5).startCall(5, true).lease).toBe(40);
    expect(busyBook(0, 500, 5).startCall(5, true).lease).toBe(1_000);
    // Nobody could ask for the places back, or the key was not answered within a lease's time.
    expect(busyBook(0, 10, 5).startCall(5, false).lease).toBe(0);
    expect(busyBook(0, 10, 5).startCall(LEASE_MS + 1, true).lease).toBe(0);
  });

  it('asks for one lease at a time', () => {
    const book = busyBook(0, 10, 5);
    const first = book.startCall(5, true);
    expect(first.lease).toBeGreaterThan(0);
    expect(book.leaseInFlight).toBe(true);
    expect(book.startCall(5, true).lease).toBe(0);
    book.ended(first);
    expect(book.leaseInFlight).toBe(false);
  });

  it('hands out a lease’s places in order until it is used up, asking for the next one at half', () => {
    const book = busyBook(0, 10, 5);
    const call = book.startCall(5, true);
    grant(book, call, 100, 4);
    expect(book.take(6)).toBe(101);
    expect(book.wantsNext).toBe(false);
    expect(book.take(6)).toBe(102);
    expect(book.wantsNext).toBe(true);
    expect([book.take(6), book.take(6), book.take(6)]).toEqual([103, 104, 0]);
    // All used: settled with the next call, nothing to give back.
    expect(book.startCall(7, false)).toMatchObject({ settled: 4, returned: 0 });
  });

  it('ends a lease LEASE_MS after the call that brought it was sent, on the caller’s clock', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 10);
    expect(book.take(5 + LEASE_MS - 1)).toBe(1);
    expect(book.take(5 + LEASE_MS)).toBe(0);
    expect(book.startCall(5 + LEASE_MS, false)).toMatchObject({ settled: 10, returned: 9 });
  });

  it('keeps a lease that arrives while the current one runs as the spare, used once the current one is', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 2);
    expect(book.take(6)).toBe(1);
    grant(book, book.startCall(6, true), 50, 3);
    expect(book.wantsNext).toBe(false);
    expect([book.take(7), book.take(7), book.take(7)]).toEqual([2, 51, 52]);
  });

  it('replaces a lease that ended before the next one came, settling it', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 3);
    expect(book.take(6)).toBe(1);
    grant(book, book.startCall(5 + LEASE_MS, true), 10, 3);
    expect(book.take(5 + LEASE_MS)).toBe(11);
    expect(book.startCall(5 + LEASE_MS, false)).toMatchObject({ settled: 3, returned: 2 });
  });

  it('takes no more leases in a window once a call was refused or got none', () => {
    const refused = busyBook(0, 10, 5);
    const call = refused.startCall(5, true);
    refused.answered(call, 3, [1, 0, 0, 10, 0]);
    refused.ended(call);
    refused.take(6);
    expect(refused.startCall(6, true).lease).toBe(0);

    const low = busyBook(0, 10, 5);
    grant(low, low.startCall(5, true), 0, 0, 1);
    low.take(6);
    expect(low.startCall(6, true).lease).toBe(0);
  });

  it('gives everything unused back on a reclaim, and takes no more leases', () => {
    const book = busyBook(0, 10, 5);
    grant(book, book.startCall(5, true), 0, 8);
    grant(book, book.startCall(5, true), 8, 8);
    expect(book.take(6)).toBe(1);
    book.reclaim();
    expect(book.take(6)).toBe(0);
    expect(book.owes).toBe(true);
    expect(book.startCall(6, true)).toEqual({ sentAt: 6, lease: 0, settled: 16, returned: 15 });
    expect(book.owes).toBe(false);
  });

  it('gives back a lease that arrives after a reclaim, once the requests that waited for it took their places', () => {
    const book = busyBook(0, 10, 5);
    const call = book.startCall(5, true);
    book.reclaim();
    grant(book, call, 0, 8);
    expect(book.next(6)).toBe(1);
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
    book.answered(call, 0, [0, 4, 0, 104, 0, 7_004, 0]);
    book.ended(call);
    expect(book.take(6)).toBe(101);
    expect(book.shifts).toEqual([0, 6_900]);
    const spare = book.startCall(6, true);
    book.answered(spare, 0, [0, 2, 0, 300, 0, 250, 0]);
    book.ended(spare);
    expect([book.take(6), book.take(6), book.take(6)]).toEqual([102, 103, 104]);
    expect(book.shifts).toEqual([0, 6_900]);
    expect(book.take(6)).toBe(299);
    expect(book.shifts).toEqual([0, -50]);
  });

  it('ends its leases when the key has not been seen for a lease’s time', () => {
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
  | { readonly kind: 'take' }
  | { readonly kind: 'grant'; readonly places: number }
  | { readonly kind: 'settle' }
  | { readonly kind: 'reclaim' }
  | { readonly kind: 'quiet' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 60 }) }), weight: 3 },
  { arbitrary: fc.constant({ kind: 'take' as const }), weight: 6 },
  { arbitrary: fc.record({ kind: fc.constant('grant' as const), places: fc.integer({ min: 1, max: 30 }) }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'settle' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'reclaim' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'quiet' as const }), weight: 1 },
);

describe('LeaseBook, over any sequence of requests, grants, reclaims and clock steps', () => {
  it('hands out each granted place at most once, only while its lease runs, and settles every place with the unused ones returned', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        let now = 1_700_000_000_000;
        let count = 0;
        const book = new LeaseBook();
        /** Each granted place's lease end. */
        const grantedUntil = new Map<number, number>();
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
              const position = book.take(now);
              if (position === 0) break;
              // Granted, not handed out before, and its lease still running.
              expect(grantedUntil.get(position)).toBeGreaterThan(now);
              expect(used.has(position)).toBe(false);
              used.add(position);
              break;
            }
            case 'grant': {
              const call = book.startCall(now, true);
              settle(call);
              for (let p = count + 1; p <= count + s.places; p++) grantedUntil.set(p, call.sentAt + LEASE_MS);
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
      fc.property(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 0, max: 10_000 }), (places, after) => {
        const book = busyBook(0, 10, 5);
        grant(book, book.startCall(5, true), 0, places);
        expect(book.take(5 + LEASE_MS + after)).toBe(0);
        expect(book.startCall(5 + LEASE_MS + after, false)).toMatchObject({ settled: places, returned: places });
      }),
    );
  });
});
