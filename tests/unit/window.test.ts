import fc from 'fast-check';
import { PERIODS, parsePolicy, secondsUntil, windowAt, type Period } from '../../src/limits/window.js';

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
      fc.property(period, instant, fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (p, now, f) => {
        const w = windowAt(p, now);
        const inside = w.start + Math.floor(f * (w.end - w.start));
        const again = windowAt(p, inside);
        return again.start === w.start && again.end === w.end;
      }),
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
  ])('aligns a %s window to UTC (%s)', (p, now, start, end) => {
    const w = windowAt(p, Date.parse(now));
    expect(new Date(w.start).toISOString()).toBe(start);
    expect(new Date(w.end).toISOString()).toBe(end);
  });

  it('starts every week on a Monday at 00:00 UTC', () => {
    fc.assert(
      fc.property(instant, (now) => {
        const d = new Date(windowAt('week', now).start);
        return d.getUTCDay() === 1 && d.getUTCHours() === 0 && d.getUTCMinutes() === 0 && d.getUTCSeconds() === 0;
      }),
    );
  });
});

describe('secondsUntil', () => {
  it('is whole seconds, rounded up, never below 1', () => {
    expect(secondsUntil(10_000, 9_999)).toBe(1);
    expect(secondsUntil(10_000, 10_000)).toBe(1);
    expect(secondsUntil(10_000, 8_500)).toBe(2);
    fc.assert(fc.property(instant, fc.integer({ min: 0, max: 1e9 }), (now, d) => secondsUntil(now + d, now) >= Math.max(1, d / 1000)));
  });
});

describe('parsePolicy', () => {
  it('reads limit/period', () => {
    expect(parsePolicy('1000/hour')).toEqual({ limit: 1000, period: 'hour' });
    expect(parsePolicy(' 5 / second ')).toEqual({ limit: 5, period: 'second' });
  });
  it.each(['', '1000', 'hour', '0/hour', '-1/hour', '10/fortnight', '1.5/day', '99999999999999999/day'])('refuses %j', (text) => {
    expect(parsePolicy(text)).toBeUndefined();
  });
});
