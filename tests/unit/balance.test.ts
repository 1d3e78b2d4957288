/**
 * Prepaid balances (docs/guides/credits.md), pure: refill windows (daily at 00:00 UTC; monthly on a day of the
 * month, the month's last day when it is shorter), and how a held count is brought up to the
 * database's record. Properties hold for all instants, days and counts (fast-check).
 */
import fc from 'fast-check';
import {
  balanceRescheduled,
  balanceSet,
  balanceToppedUp,
  nextRefillAt,
  refillWindowAt,
  remainingOf,
  settle,
  type Balance,
  type HeldBalance,
  type Refill,
} from '../../src/plans/balance.js';

const DAY_MS = 86_400_000;
// 1970 to 2200, in milliseconds.
const instant = fc.integer({ min: 0, max: 7_258_118_400_000 });
const dayOfMonth = fc.integer({ min: 1, max: 31 });
const amount = fc.integer({ min: 0, max: 1_000_000 });
const refill: fc.Arbitrary<Refill> = fc.oneof(
  fc.record({ amount, interval: fc.constant('day' as const), dayOfMonth: fc.constant(1) }),
  fc.record({ amount, interval: fc.constant('month' as const), dayOfMonth }),
);
const monthly = (day: number, amount = 100): Refill => ({ amount, interval: 'month', dayOfMonth: day });
const lastDayOfMonth = (year: number, month: number) => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

describe('refill windows', () => {
  it('hold the instant they are asked for, and the next one starts when this one ends', () => {
    fc.assert(
      fc.property(refill, instant, (r, now) => {
        const start = refillWindowAt(r, now);
        const next = nextRefillAt(r, now);
        return (
          start <= now && now < next && refillWindowAt(r, next) === next && nextRefillAt(r, next - 1) === next
        );
      }),
    );
  });

  it('start at 00:00 UTC: every day for a daily refill', () => {
    fc.assert(
      fc.property(amount, instant, (a, now) => {
        const r: Refill = { amount: a, interval: 'day', dayOfMonth: 1 };
        const start = refillWindowAt(r, now);
        return start % DAY_MS === 0 && nextRefillAt(r, now) === start + DAY_MS;
      }),
    );
  });

  it("start on the day of the month, or on the month's last day when it is shorter", () => {
    fc.assert(
      fc.property(dayOfMonth, instant, (day, now) => {
        const start = new Date(refillWindowAt(monthly(day), now));
        const expected = Math.min(day, lastDayOfMonth(start.getUTCFullYear(), start.getUTCMonth()));
        return start.getTime() % DAY_MS === 0 && start.getUTCDate() === expected;
      }),
    );
  });

  it('come once a month: consecutive refills are in consecutive months', () => {
    fc.assert(
      fc.property(dayOfMonth, instant, (day, now) => {
        const start = new Date(refillWindowAt(monthly(day), now));
        const next = new Date(nextRefillAt(monthly(day), now));
        const months = (d: Date) => d.getUTCFullYear() * 12 + d.getUTCMonth();
        return months(next) === months(start) + 1;
      }),
    );
  });

  it('fall on the 28th or 29th of February, the 30th of April, for a refill on the 31st', () => {
    const r = monthly(31);
    expect(new Date(nextRefillAt(r, Date.UTC(2026, 1, 10))).toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(new Date(nextRefillAt(r, Date.UTC(2028, 1, 10))).toISOString()).toBe('2028-02-29T00:00:00.000Z');
    expect(new Date(nextRefillAt(r, Date.UTC(2026, 3, 1))).toISOString()).toBe('2026-04-30T00:00:00.000Z');
    // The window of 1 March started on the last day of February, and ends on 31 March.
    expect(new Date(refillWindowAt(r, Date.UTC(2026, 2, 1, 12))).toISOString()).toBe(
      '2026-02-28T00:00:00.000Z',
    );
    expect(new Date(nextRefillAt(r, Date.UTC(2026, 2, 1, 12))).toISOString()).toBe(
      '2026-03-31T00:00:00.000Z',
    );
    // On the 15th: a balance refilled on 15 December is next refilled on 15 January, across the year.
    expect(new Date(nextRefillAt(monthly(15), Date.UTC(2026, 11, 20))).toISOString()).toBe(
      '2027-01-15T00:00:00.000Z',
    );
  });
});

/** A record and a count held of it, consistent: `spent` of its `granted` spent in its window. */
const recordAndHeld = fc
  .tuple(
    fc.option(refill, { nil: null }),
    instant,
    fc.nat(5),
    fc.integer({ min: 0, max: 1_000_000 }),
    fc.nat(1_000_000),
  )
  .map(([r, now, previousEpoch, granted, spent]) => {
    const balance = balanceSet(previousEpoch, granted, r, null, now);
    const held: HeldBalance = { epoch: balance.epoch, window: balance.window, granted, spent, base: 0 };
    return { balance, held, now };
  });

describe('a held balance brought up to its record', () => {
  it('is the record itself when nothing is held (a restart, or a Redis that lost it), counted from its floor', () => {
    fc.assert(
      fc.property(recordAndHeld, fc.nat(1_000), ({ balance, now }, floor) => {
        const record: Balance = { ...balance, floor: Math.min(floor, balance.granted) };
        const h = settle(undefined, record, now);
        return remainingOf(h) === record.granted - record.floor && h.spent === record.floor;
      }),
    );
  });

  it('changes nothing for a record it has seen, or an older one', () => {
    fc.assert(
      fc.property(recordAndHeld, ({ balance, held, now }) => {
        const before = { ...held };
        const older: Balance = { ...balance, epoch: balance.epoch - 1, granted: balance.granted + 50 };
        return (
          JSON.stringify(settle({ ...held }, balance, now)) === JSON.stringify(before) &&
          JSON.stringify(settle({ ...held }, older, now)) === JSON.stringify(before)
        );
      }),
    );
  });

  it('holds the topped-up amount more, whatever was spent, until the refill sets it back to its amount', () => {
    fc.assert(
      fc.property(recordAndHeld, fc.integer({ min: 1, max: 1_000_000 }), ({ balance, held, now }, add) => {
        const topped = balanceToppedUp(balance, balance.epoch, add, now);
        const h = settle({ ...held }, topped, now);
        if (remainingOf(h) !== Math.max(0, held.granted + add - held.spent)) return false;
        if (balance.refill === null) return topped.window === 0;
        const refilled = settle(h, topped, nextRefillAt(balance.refill, now));
        return remainingOf(refilled) === balance.refill.amount;
      }),
    );
  });

  it('counts a set afresh: a new epoch, holding what was set, whatever was spent before', () => {
    fc.assert(
      fc.property(recordAndHeld, fc.nat(1_000_000), ({ balance, held, now }, value) => {
        const set = balanceSet(balance.epoch, value, balance.refill, null, now);
        return set.epoch === balance.epoch + 1 && remainingOf(settle({ ...held }, set, now)) === value;
      }),
    );
  });

  it('gives a holder without a balance one of the top-up, with no refill', () => {
    expect(balanceToppedUp(null, 3, 40, Date.UTC(2026, 0, 1))).toEqual({
      epoch: 4,
      window: 0,
      granted: 40,
      floor: 0,
      refill: null,
      lowAt: null,
    });
  });

  it('tops up across a refill that came since the record: the refill amount, plus the top-up', () => {
    const r = monthly(15, 100);
    const record = balanceSet(0, 30, r, null, Date.UTC(2026, 0, 20));
    const topped = balanceToppedUp({ ...record, floor: 30 }, 1, 5, Date.UTC(2026, 1, 16));
    expect(topped).toMatchObject({ window: Date.UTC(2026, 1, 15), granted: 105, floor: 0 });
  });

  it('keeps counting when only the refill or lowAt changes: what was spent stays spent, the new refill comes at its boundary', () => {
    fc.assert(
      fc.property(
        recordAndHeld,
        fc.option(refill, { nil: null }),
        fc.option(fc.nat(1_000), { nil: null }),
        fc.nat(DAY_MS - 1),
        ({ balance, held, now }, next, lowAt, later) => {
          const changedAt = now + later;
          const changed = balanceRescheduled(balance, next, lowAt, changedAt);
          // A refill due under the old refill came first, as it would have with the next request.
          const current = settle({ ...held }, balance, changedAt);
          const h = settle({ ...current }, changed, changedAt);
          if (changed.epoch !== balance.epoch || changed.lowAt !== lowAt) return false;
          if (JSON.stringify(h) !== JSON.stringify(current)) return false;
          if (next === null) return true;
          // Not before its next boundary, then at it: the new amount.
          const boundary = nextRefillAt(next, changedAt);
          const before = settle({ ...h }, changed, boundary - 1);
          const after = settle({ ...before }, changed, boundary);
          return remainingOf(before) === remainingOf(current) && remainingOf(after) === next.amount;
        },
      ),
    );
  });

  it('gives a balance a daily refill from tomorrow, not at once', () => {
    const record = balanceSet(0, 100, null, null, Date.UTC(2026, 0, 5, 9));
    const held: HeldBalance = { epoch: 1, window: 0, granted: 100, spent: 70, base: 0 };
    const daily = { amount: 500, interval: 'day' as const, dayOfMonth: 1 };
    const changed = balanceRescheduled(record, daily, null, Date.UTC(2026, 0, 5, 14));
    expect(remainingOf(settle({ ...held }, changed, Date.UTC(2026, 0, 5, 23, 59)))).toBe(30);
    expect(remainingOf(settle({ ...held }, changed, Date.UTC(2026, 0, 6)))).toBe(500);
  });

  it('gives a daily refill set at 00:00 UTC exactly its first refill the next day, not at once', () => {
    const record = balanceSet(0, 100, null, null, Date.UTC(2026, 0, 5, 9));
    const held: HeldBalance = { epoch: 1, window: 0, granted: 100, spent: 70, base: 0 };
    const daily = { amount: 500, interval: 'day' as const, dayOfMonth: 1 };
    const changed = balanceRescheduled(record, daily, null, Date.UTC(2026, 0, 6));
    expect(remainingOf(settle({ ...held }, changed, Date.UTC(2026, 0, 6)))).toBe(30);
    expect(remainingOf(settle({ ...held }, changed, Date.UTC(2026, 0, 6, 23, 59)))).toBe(30);
    expect(remainingOf(settle({ ...held }, changed, Date.UTC(2026, 0, 7)))).toBe(500);
  });
});
