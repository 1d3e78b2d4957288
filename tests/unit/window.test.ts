import fc from 'fast-check';
import { parsePlan } from '../../src/plans/plan.js';
import { PERIODS, secondsUntil, windowAt, type Period } from '../../src/plans/window.js';

const period = fc.constantFrom(...PERIODS);
// 1970 to 2200, in milliseconds.
const instant = fc.integer({ min: 0, max: 7_258_118_400_000 });

describe('windowAt', () => {
  it('contains the instant it was asked for', () => {
    fc.assert(
      fc.property(period, instant, (p, now) => {
        const w = windowAt(p, now);
        return w.start <= now && now < w.end;
      }),
    );
  });

  it('tiles time: the window after this one starts where this one ends', () => {
    fc.assert(
      fc.property(period, instant, (p, now) => {
        const w = windowAt(p, now);
        const next = windowAt(p, w.end);
        const prev = windowAt(p, w.start - 1);
        return next.start === w.end && prev.end === w.start && windowAt(p, w.end - 1).start === w.start;
      }),
    );
  });

  it('gives the same window to every instant inside it', () => {
    fc.assert(
      fc.property(
        period,
        instant,
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (p, now, f) => {
          const w = windowAt(p, now);
          const inside = w.start + Math.floor(f * (w.end - w.start));
          const again = windowAt(p, inside);
          return again.start === w.start && again.end === w.end;
        },
      ),
    );
  });

  it.each<[Period, string, string, string]>([
    ['second', '2026-03-04T05:06:07.890Z', '2026-03-04T05:06:07.000Z', '2026-03-04T05:06:08.000Z'],
    ['minute', '2026-03-04T05:06:07.890Z', '2026-03-04T05:06:00.000Z', '2026-03-04T05:07:00.000Z'],
    ['hour', '2026-03-04T05:06:07.890Z', '2026-03-04T05:00:00.000Z', '2026-03-04T06:00:00.000Z'],
    ['day', '2026-03-04T05:06:07.890Z', '2026-03-04T00:00:00.000Z', '2026-03-05T00:00:00.000Z'],
    // 2026-03-04 is a Wednesday: the week runs from Monday the 2nd to Monday the 9th.
    ['week', '2026-03-04T05:06:07.890Z', '2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z'],
    ['week', '2026-03-01T23:59:59.999Z', '2026-02-23T00:00:00.000Z', '2026-03-02T00:00:00.000Z'],
    ['month', '2024-02-29T23:59:59.999Z', '2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z'],
    ['month', '2026-12-31T12:00:00.000Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['year', '2026-03-04T05:06:07.890Z', '2026-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['year', '2024-12-31T23:59:59.999Z', '2024-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'],
    ['year', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
  ])('aligns a %s window to UTC (%s)', (p, now, start, end) => {
    const w = windowAt(p, Date.parse(now));
    expect(new Date(w.start).toISOString()).toBe(start);
    expect(new Date(w.end).toISOString()).toBe(end);
  });

  it('starts every year on 1 January at 00:00 UTC and lasts 365 or 366 days', () => {
    fc.assert(
      fc.property(instant, (now) => {
        const { start, end } = windowAt('year', now);
        const d = new Date(start);
        const leap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
        const days = (end - start) / 86_400_000;
        return (
          d.getUTCMonth() === 0 &&
          d.getUTCDate() === 1 &&
          d.getUTCHours() === 0 &&
          d.getUTCMilliseconds() === 0 &&
          days === (leap(d.getUTCFullYear()) ? 366 : 365)
        );
      }),
    );
  });

  it('starts every week on a Monday at 00:00 UTC', () => {
    fc.assert(
      fc.property(instant, (now) => {
        const d = new Date(windowAt('week', now).start);
        return (
          d.getUTCDay() === 1 && d.getUTCHours() === 0 && d.getUTCMinutes() === 0 && d.getUTCSeconds() === 0
        );
      }),
    );
  });
});

describe('secondsUntil', () => {
  it('is whole seconds, rounded up, never below 1', () => {
    expect(secondsUntil(10_000, 9_999)).toBe(1);
    expect(secondsUntil(10_000, 10_000)).toBe(1);
    expect(secondsUntil(10_000, 8_500)).toBe(2);
    fc.assert(
      fc.property(
        instant,
        fc.integer({ min: 0, max: 1e9 }),
        (now, d) => secondsUntil(now + d, now) >= Math.max(1, d / 1000),
      ),
    );
  });
});

describe('parsePlan (DEFAULT_RATE_LIMIT)', () => {
  it('reads limit/period as one fixed limit named after its period', () => {
    expect(parsePlan('1000/hour')?.limits).toEqual([
      { name: 'hour', limit: 1000, period: 'hour', algorithm: 'fixed' },
    ]);
    expect(parsePlan(' 5 / second ')?.limits).toEqual([
      { name: 'second', limit: 5, period: 'second', algorithm: 'fixed' },
    ]);
    expect(parsePlan('3/year')?.limits).toEqual([
      { name: 'year', limit: 3, period: 'year', algorithm: 'fixed' },
    ]);
  });
  it('reads up to four limits of different periods', () => {
    expect(parsePlan('10/second, 10000/day')?.limits.map((l) => `${l.name}:${l.limit}`)).toEqual([
      'second:10',
      'day:10000',
    ]);
    expect(parsePlan('1/second,2/minute,3/hour,4/day')?.limits).toHaveLength(4);
  });
  it.each([
    '',
    '1000',
    'hour',
    '0/hour',
    '-1/hour',
    '10/fortnight',
    '1.5/day',
    '99999999999999999/day',
    '1/hour,2/hour',
    '1/second,2/minute,3/hour,4/day,5/week',
    '1/hour,',
  ])('refuses %j', (text) => {
    expect(parsePlan(text)).toBeUndefined();
  });
});
