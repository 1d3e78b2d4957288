import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { LimitInput, Plan } from '../../src/plans/plan.js';
import type { Subject } from '../../src/plans/subject.js';
import { SLOTS, slidingPeriodMs, slotMs } from '../../src/limits/sliding-window.js';
import { secondsUntil, windowAt, type Period } from '../../src/plans/window.js';
import { keyOnly, plan } from '../helpers/plans.js';

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
    const at = (ms: number) => l.consume(keyOnly('key', p), 1, T0 + ms);
    expect([at(0), at(10), at(20), at(30)].map((d) => d.allowed)).toEqual([true, true, true, false]);
    // The burst is the full one: it refuses, until its second ends.
    expect(at(40)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: p.limits[0],
        remaining: 0,
        resetMs: T0 + 1_000,
      },
      balance: undefined,
    });
    // A new second: two more fill the minute, which refuses from then on, whatever the burst holds.
    expect([at(1_000), at(1_010), at(1_020)].map((d) => d.allowed)).toEqual([true, true, false]);
    expect(at(2_000)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: p.limits[1],
        remaining: 0,
        resetMs: T0 + 60_000,
      },
      balance: undefined,
    });
    // Both full: the one whose window ends last is reported (the earliest a retry can succeed).
    const both = plan({ limit: 1, period: 'second' }, { limit: 1, period: 'hour' });
    expect(l.consume(keyOnly('both', both), 1, T0).allowed).toBe(true);
    expect(l.consume(keyOnly('both', both), 1, T0 + 1)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: both.limits[1],
        remaining: 0,
        resetMs: T0 + 3_600_000,
      },
      balance: undefined,
    });
    expect(at(60_000).allowed).toBe(true);
  });

  it('reports the limit with the fewest left, ties going to the window that ends last', () => {
    const l = limiter();
    const p = plan({ limit: 4, period: 'second' }, { limit: 10, period: 'hour' });
    expect(l.consume(keyOnly('key', p), 1, T0)).toMatchObject({
      allowed: true,
      limit: {
        scope: 'key',
        rule: p.limits[0],
        remaining: 3,
        resetMs: T0 + 1_000,
      },
      balance: undefined,
    });
    const q = plan({ limit: 4, period: 'second' }, { limit: 4, period: 'hour' });
    expect(l.consume(keyOnly('other', q), 1, T0)).toMatchObject({
      allowed: true,
      limit: {
        scope: 'key',
        rule: q.limits[1],
        remaining: 3,
        resetMs: T0 + 3_600_000,
      },
      balance: undefined,
    });
  });

  it('keeps what the current windows spent when the plan changes', async () => {
    const l = limiter();
    for (let i = 0; i < 6; i++) l.consume(keyOnly('key', plan({ limit: 10, period: 'minute' })), 1, T0);
    const lowered = plan({ limit: 5, period: 'minute' }, { limit: 100, period: 'day' });
    expect(l.consume(keyOnly('key', lowered), 1, T0 + 1)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: lowered.limits[0],
        resetMs: T0 + 60_000,
      },
    });
    expect(await l.peek(keyOnly('key', lowered), T0 + 2)).toEqual([
      { scope: 'key', rule: lowered.limits[0], remaining: 0, resetMs: T0 + 60_000 },
      { scope: 'key', rule: lowered.limits[1], remaining: 100, resetMs: Date.UTC(2026, 2, 4) },
    ]);
    expect(l.consume(keyOnly('key', lowered), 1, T0 + 60_000).allowed).toBe(true);
  });
});

describe('MemoryRateLimiter, every limit’s state in its decision (verify)', () => {
  it('returns each limit of each subject after the decision, admitted or refused', () => {
    const l = limiter();
    const p = plan({ limit: 3, period: 'second', name: 'burst' }, { limit: 5, period: 'minute' });
    const admitted = l.consume(keyOnly('key', p), 2, T0);
    expect(admitted.allowed).toBe(true);
    expect(admitted.states.map((s) => [s.rule.name, s.remaining, s.resetMs - T0])).toEqual([
      ['burst', 1, 1_000],
      ['minute', 3, 60_000],
    ]);
    const refused = l.consume(keyOnly('key', p), 2, T0);
    expect(refused.allowed).toBe(false);
    expect(refused.states.map((s) => [s.rule.name, s.remaining])).toEqual([
      ['burst', 1],
      ['minute', 3],
    ]);
  });
});

describe('MemoryRateLimiter, a sliding limit', () => {
  it('admits no more than the limit across a window edge, where a fixed window admits twice the limit', () => {
    const edge = windowAt('second', T0).end;
    const burst = (p: ReturnType<typeof plan>) => {
      const l = limiter();
      let admitted = 0;
      for (const t of [edge - 100, edge])
        for (let i = 0; i < 10; i++) if (l.consume(keyOnly('key', p), 1, t).allowed) admitted++;
      return admitted;
    };
    expect(burst(plan({ limit: 10, period: 'second' }))).toBe(20);
    expect(burst(plan({ limit: 10, period: 'second', algorithm: 'sliding' }))).toBe(10);
  });

  it('frees places as the slots that hold them leave the window, and says when', () => {
    const l = limiter();
    const p = plan({ limit: 2, period: 'minute', algorithm: 'sliding' });
    const slot = slotMs('minute');
    expect(l.consume(keyOnly('key', p), 1, T0).allowed).toBe(true);
    expect(l.consume(keyOnly('key', p), 1, T0 + 10 * slot).allowed).toBe(true);
    // Full: the place of T0's slot comes back once that slot leaves, SLOTS + 1 slots after it started.
    expect(l.consume(keyOnly('key', p), 1, T0 + 60_000)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: p.limits[0],
        remaining: 0,
        resetMs: T0 + (SLOTS + 1) * slot,
      },
      balance: undefined,
    });
    expect(l.consume(keyOnly('key', p), 1, T0 + (SLOTS + 1) * slot).allowed).toBe(true);
  });
});

describe('MemoryRateLimiter, a sliding per-second limit refusing', () => {
  it('names a reset in whole seconds, never before a retry can succeed, and never in the past while it refuses', () => {
    const l = limiter();
    const p = plan({ limit: 3, period: 'second', algorithm: 'sliding' });
    for (const ms of [100, 110, 120]) expect(l.consume(keyOnly('key', p), 1, T0 + ms).allowed).toBe(true);
    // The places of T0 + 100 ms stop counting at T0 + 1,150 ms: the whole second after that is T0 + 2 s.
    const refused = l.consume(keyOnly('key', p), 1, T0 + 130);
    expect(refused).toMatchObject({ allowed: false, limit: { resetMs: T0 + 2_000 } });
    expect(secondsUntil(refused.limit!.resetMs, T0 + 130)).toBe(2);
    const again = l.consume(keyOnly('key', p), 1, T0 + 135);
    expect(again).toMatchObject({ allowed: false, limit: { resetMs: T0 + 2_000 } });
    expect(l.consume(keyOnly('key', p), 1, T0 + 2_000).allowed).toBe(true);
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
const timesArb = fc
  .array(fc.integer({ min: 0, max: 1_500 }), { minLength: 1, maxLength: 150 })
  .map((gaps) => {
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
          const decision = l.consume(keyOnly('key', p), 1, t);
          if (!decision.allowed) {
            // The limit the refusal names is full.
            expect(full(decision.limit!.rule, t)).toBe(true);
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

describe('MemoryRateLimiter, a key of a consumer, requests of several costs', () => {
  const keyOf = (id: string, p: Plan, consumer: Plan): Subject[] => [
    { scope: 'key', id, plan: p },
    { scope: 'consumer', id: 'con_1', plan: consumer },
  ];

  it('admits a request only when the key and the consumer both have room for its cost, and charges both or neither', async () => {
    const l = limiter();
    const consumer = plan({ limit: 10, period: 'minute' });
    const a = keyOf('key_a', plan({ limit: 6, period: 'minute' }), consumer);
    const b = keyOf('key_b', plan({ limit: 100, period: 'minute' }), consumer);
    expect(l.consume(a, 5, T0)).toMatchObject({
      allowed: true,
      limit: {
        scope: 'key',
        rule: a[0]!.plan.limits[0],
        remaining: 1,
        resetMs: T0 + 60_000,
      },
      balance: undefined,
    });
    // The key has 1 left: a cost of 2 is refused by the key, and the consumer is not charged.
    expect(l.consume(a, 2, T0)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: a[0]!.plan.limits[0],
        remaining: 1,
        resetMs: T0 + 60_000,
      },
      balance: undefined,
    });
    expect(l.consume(b, 5, T0)).toMatchObject({
      allowed: true,
      limit: {
        scope: 'consumer',
        rule: consumer.limits[0],
        remaining: 0,
        resetMs: T0 + 60_000,
      },
      balance: undefined,
    });
    // Now the consumer refuses, and the key is not charged.
    expect(l.consume(b, 1, T0)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'consumer',
        rule: consumer.limits[0],
        remaining: 0,
        resetMs: T0 + 60_000,
      },
      balance: undefined,
    });
    expect(await l.peek(b, T0)).toEqual([
      { scope: 'key', rule: b[0]!.plan.limits[0], remaining: 95, resetMs: T0 + 60_000 },
      { scope: 'consumer', rule: consumer.limits[0], remaining: 0, resetMs: T0 + 60_000 },
    ]);
  });

  it('refuses a cost outside 1 to 10^9 (a reservation may pass the 10,000 of a plan) and a decision without a limit, whatever it holds', () => {
    const l = limiter();
    const p = keyOnly('key', plan({ limit: 10, period: 'minute' }));
    for (const cost of [0, -1, 1.5, 1_000_000_001, Number.NaN])
      expect(() => l.consume(p, cost, T0)).toThrow(RangeError);
    expect(() => l.consume([{ scope: 'key', id: 'key', plan: plan() }], 1, T0)).toThrow(RangeError);
    expect(l.consume(p, 10_000, T0)).toMatchObject({ allowed: false, limit: { remaining: 10 } });
  });
});

/** Three keys of one consumer: each key's plan (possibly none), the consumer's, and requests (time, key, cost). */
const consumerCase = fc.record({
  keyPlans: fc.array(fc.option(limitsArb, { nil: undefined }), { minLength: 3, maxLength: 3 }),
  consumerLimits: limitsArb.map((limits) => limits.map((l) => ({ ...l, limit: l.limit * 3 }))),
  requests: fc.array(
    fc.record({
      gap: fc.integer({ min: 0, max: 700 }),
      key: fc.integer({ min: 0, max: 2 }),
      cost: fc.oneof(fc.constant(1), fc.constant(5), fc.integer({ min: 1, max: 12 })),
    }),
    {
      minLength: 1,
      maxLength: 120,
    },
  ),
});

describe('MemoryRateLimiter, over any plans of a consumer and its keys and any requests of any costs', () => {
  it('charges every subject exactly the units it admitted, admits only when each limit has room for the cost, and names a limit without room when it refuses', async () => {
    await fc.assert(
      fc.asyncProperty(consumerCase, async ({ keyPlans, consumerLimits, requests }) => {
        const l = limiter();
        const consumer: Subject = { scope: 'consumer', id: 'con_p', plan: plan(...consumerLimits) };
        const keys = keyPlans.map((limits, i): Subject[] => [
          { scope: 'key', id: `key_${i}`, plan: limits === undefined ? plan() : plan(...limits) },
          consumer,
        ]);
        /** Admitted requests: when, through which key, at what cost. */
        const admitted: { t: number; key: number; cost: number }[] = [];
        /** Units `subject` admitted that a limit still counts at `t` (its fixed window, or its slots). */
        const used = (rule: Plan['limits'][number], key: number | undefined, t: number) => {
          const from =
            rule.algorithm === 'fixed'
              ? windowAt(rule.period, t).start
              : (Math.floor(t / slotMs(rule.period)) - SLOTS) * slotMs(rule.period);
          return admitted
            .filter((a) => a.t >= from && a.t <= t && (key === undefined || a.key === key))
            .reduce((sum, a) => sum + a.cost, 0);
        };
        let t = T0;
        for (const { gap, key, cost } of requests) {
          t += gap;
          const subjects = keys[key]!;
          const room = (s: Subject, rule: Plan['limits'][number]) =>
            rule.limit - used(rule, s.scope === 'key' ? key : undefined, t);
          const fits = subjects.every((s) => s.plan.limits.every((rule) => room(s, rule) >= cost));
          const decision = l.consume(subjects, cost, t);
          expect(decision.allowed).toBe(fits);
          if (!decision.allowed) {
            const by = subjects.find((s) => s.scope === decision.limit!.scope)!;
            expect(room(by, decision.limit!.rule)).toBeLessThan(cost);
          } else {
            admitted.push({ t, key, cost });
          }
          // What every subject's limits hold is what it admitted: a refusal charged nobody.
          for (const subjectsOf of keys) {
            const states = await l.peek(subjectsOf, t);
            const i = keys.indexOf(subjectsOf);
            const expected = subjectsOf.flatMap((s) =>
              s.plan.limits.map((rule) =>
                Math.max(0, rule.limit - used(rule, s.scope === 'key' ? i : undefined, t)),
              ),
            );
            expect(states.map((st) => st.remaining)).toEqual(expected);
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
