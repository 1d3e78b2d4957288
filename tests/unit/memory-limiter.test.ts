import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { LimitInput } from '../../src/limits/plan.js';
import { SLOTS, slidingPeriodMs, slotMs } from '../../src/limits/sliding-window.js';
import { windowAt, type Period } from '../../src/limits/window.js';
import { plan } from '../helpers/plans.js';

/** Tuesday 2026-03-03 10:00:00.000 UTC. */
const T0 = Date.UTC(2026, 2, 3, 10, 0, 0, 0);

const limiters: MemoryRateLimiter[] = [];
function limiter(): MemoryRateLimiter {
  const l = new MemoryRateLimiter();
  limiters.push(l);
  return l;
}
afterAll(() => Promise.all(limiters.map((l) => l.close())));

describe('MemoryRateLimiter, a plan of several limits', () => {
  it('admits only while every limit has room and counts each admission in all of them', () => {
    const l = limiter();
    const p = plan({ limit: 3, period: 'second', name: 'burst' }, { limit: 5, period: 'minute' });
    const at = (ms: number) => l.consume('key', p, T0 + ms);
    expect([at(0), at(10), at(20), at(30)].map((d) => d.allowed)).toEqual([true, true, true, false]);
    // The burst is the full one: it refuses, until its second ends.
    expect(at(40)).toEqual({ allowed: false, rule: p.limits[0], remaining: 0, resetMs: T0 + 1_000 });
    // A new second: two more fill the minute, which refuses from then on, whatever the burst holds.
    expect([at(1_000), at(1_010), at(1_020)].map((d) => d.allowed)).toEqual([true, true, false]);
    expect(at(2_000)).toEqual({ allowed: false, rule: p.limits[1], remaining: 0, resetMs: T0 + 60_000 });
    // Both full: the one whose window ends last is reported (the earliest a retry can succeed).
    const both = plan({ limit: 1, period: 'second' }, { limit: 1, period: 'hour' });
    expect(l.consume('both', both, T0).allowed).toBe(true);
    expect(l.consume('both', both, T0 + 1)).toEqual({ allowed: false, rule: both.limits[1], remaining: 0, resetMs: T0 + 3_600_000 });
    expect(at(60_000).allowed).toBe(true);
  });

  it('reports the limit with the fewest left, ties going to the window that ends last', () => {
    const l = limiter();
    const p = plan({ limit: 4, period: 'second' }, { limit: 10, period: 'hour' });
    expect(l.consume('key', p, T0)).toEqual({ allowed: true, rule: p.limits[0], remaining: 3, resetMs: T0 + 1_000 });
    const q = plan({ limit: 4, period: 'second' }, { limit: 4, period: 'hour' });
    expect(l.consume('other', q, T0)).toEqual({ allowed: true, rule: q.limits[1], remaining: 3, resetMs: T0 + 3_600_000 });
  });

  it('keeps what the current windows spent when the plan changes', async () => {
    const l = limiter();
    for (let i = 0; i < 6; i++) l.consume('key', plan({ limit: 10, period: 'minute' }), T0);
    const lowered = plan({ limit: 5, period: 'minute' }, { limit: 100, period: 'day' });
    expect(l.consume('key', lowered, T0 + 1)).toMatchObject({ allowed: false, rule: lowered.limits[0], resetMs: T0 + 60_000 });
    expect(await l.peek('key', lowered, T0 + 2)).toEqual([
      { rule: lowered.limits[0], remaining: 0, resetMs: T0 + 60_000 },
      { rule: lowered.limits[1], remaining: 100, resetMs: Date.UTC(2026, 2, 4) },
    ]);
    expect(l.consume('key', lowered, T0 + 60_000).allowed).toBe(true);
  });
});

describe('MemoryRateLimiter, a sliding limit', () => {
  it('admits no more than the limit across a window edge, where a fixed window admits twice the limit', () => {
    const edge = windowAt('second', T0).end;
    const burst = (p: ReturnType<typeof plan>) => {
      const l = limiter();
      let admitted = 0;
      for (const t of [edge - 100, edge]) for (let i = 0; i < 10; i++) if (l.consume('key', p, t).allowed) admitted++;
      return admitted;
    };
    expect(burst(plan({ limit: 10, period: 'second' }))).toBe(20);
    expect(burst(plan({ limit: 10, period: 'second', algorithm: 'sliding' }))).toBe(10);
  });

  it('frees places as the slots that hold them leave the window, and says when', () => {
    const l = limiter();
    const p = plan({ limit: 2, period: 'minute', algorithm: 'sliding' });
    const slot = slotMs('minute');
    expect(l.consume('key', p, T0).allowed).toBe(true);
    expect(l.consume('key', p, T0 + 10 * slot).allowed).toBe(true);
    // Full: the place of T0's slot comes back once that slot leaves, SLOTS + 1 slots after it started.
    expect(l.consume('key', p, T0 + 60_000)).toEqual({ allowed: false, rule: p.limits[0], remaining: 0, resetMs: T0 + (SLOTS + 1) * slot });
    expect(l.consume('key', p, T0 + (SLOTS + 1) * slot).allowed).toBe(true);
  });
});

/** A plan of one to three limits of short periods, each fixed or sliding, names unique. */
const limitsArb: fc.Arbitrary<LimitInput[]> = fc
  .uniqueArray(
    fc.record({
      limit: fc.integer({ min: 1, max: 8 }),
      period: fc.constantFrom<Period>('second', 'minute'),
      algorithm: fc.constantFrom('fixed' as const, 'sliding' as const),
    }),
    { minLength: 1, maxLength: 3, selector: (l) => `${l.period}/${l.algorithm}` },
  )
  .map((limits) => limits.map((l, i) => ({ ...l, name: `l${i}` })));

/** Request times, ms after T0, in order: bursts and gaps over a few minutes. */
const timesArb = fc.array(fc.integer({ min: 0, max: 1_500 }), { minLength: 1, maxLength: 150 }).map((gaps) => {
  let t = 0;
  return gaps.map((gap) => (t += gap));
});

describe('MemoryRateLimiter, over any plan and any sequence of requests', () => {
  it('never admits more than a limit allows, and refuses only when a limit is full', () => {
    fc.assert(
      fc.property(limitsArb, timesArb, (limits, times) => {
        const p = plan(...limits);
        const l = limiter();
        const admitted: number[] = [];
        /** Admitted requests in [from, to]. */
        const within = (from: number, to: number) => admitted.filter((t) => t >= from && t <= to).length;
        const full = (rule: (typeof p.limits)[number], t: number) => {
          if (rule.algorithm === 'fixed') {
            const w = windowAt(rule.period, t);
            return within(w.start, t) >= rule.limit;
          }
          const s = slotMs(rule.period);
          return within((Math.floor(t / s) - SLOTS) * s, t) >= rule.limit;
        };
        for (const offset of times) {
          const t = T0 + offset;
          const decision = l.consume('key', p, t);
          if (!decision.allowed) {
            // The limit the refusal names is full.
            expect(full(decision.rule, t)).toBe(true);
            continue;
          }
          expect(p.limits.some((rule) => full(rule, t))).toBe(false);
          admitted.push(t);
          for (const rule of p.limits) {
            if (rule.algorithm === 'fixed') {
              const w = windowAt(rule.period, t);
              expect(within(w.start, w.end - 1)).toBeLessThanOrEqual(rule.limit);
            } else {
              // No span of one period, ending here, holds more than the limit.
              expect(within(t - slidingPeriodMs(rule.period) + 1, t)).toBeLessThanOrEqual(rule.limit);
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
