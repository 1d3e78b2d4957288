import fc from 'fast-check';
import { ALGORITHM_OF } from '../../src/limits/core/algorithms.js';
import { balanceAt, balanceCharged, balanceVerdictOf } from '../../src/limits/core/balance.js';
import { admissionOf, refusalOf } from '../../src/limits/core/combine.js';
import { concurrency, released } from '../../src/limits/core/concurrency.js';
import { fixedWindow } from '../../src/limits/core/fixed-window.js';
import { countedVerdict, verdictOf, type LimitAlgorithm } from '../../src/limits/core/limit-algorithm.js';
import { slidingWindow } from '../../src/limits/core/sliding-window.js';
import { tokenBucket } from '../../src/limits/core/token-bucket.js';
import type { Balance } from '../../src/plans/balance.js';
import { ruleOf, type LimitInput, type LimitRule } from '../../src/plans/plan.js';
import { windowAt } from '../../src/plans/window.js';
import { slidingPeriodMs, slotMs, SLOTS } from '../../src/limits/sliding-window.js';

const T0 = Date.UTC(2026, 0, 1);

/** Drives one limit through requests of `units` at the given instants, as a limiter does: the instants admitted. */
function drive<S>(
  algorithm: LimitAlgorithm<S>,
  rule: LimitRule,
  requests: readonly (readonly [atMs: number, units: number])[],
): [number, number][] {
  let state: S | undefined;
  const admitted: [number, number][] = [];
  for (const [atMs, units] of requests) {
    const now = algorithm.at(state, rule, atMs);
    const verdict = verdictOf(algorithm, 'key', rule, now, units, atMs);
    state = verdict.fits ? algorithm.charged(now, rule, units) : now;
    if (verdict.fits) admitted.push([atMs, units]);
  }
  return admitted;
}

/** Increasing instants from T0, each `gap` after the one before, with a cost. */
const requestsOf = (maxGapMs: number, maxUnits: number) =>
  fc
    .array(fc.tuple(fc.integer({ min: 0, max: maxGapMs }), fc.integer({ min: 1, max: maxUnits })), {
      maxLength: 80,
    })
    .map((steps) => {
      let at = T0;
      return steps.map(([gap, units]) => [(at += gap), units] as const);
    });

const unitsIn = (admitted: readonly [number, number][], from: number, to: number): number =>
  admitted.filter(([at]) => at >= from && at < to).reduce((sum, [, units]) => sum + units, 0);

describe('core: a fixed window', () => {
  it('admits exactly the limit per window, then refuses until the window ends', () => {
    const rule = ruleOf({ limit: 3, period: 'second' });
    const admitted = drive(fixedWindow, rule, [
      [T0, 2],
      [T0 + 10, 1],
      [T0 + 20, 1],
      [T0 + 999, 1],
      [T0 + 1_000, 3],
    ]);
    expect(admitted).toEqual([
      [T0, 2],
      [T0 + 10, 1],
      [T0 + 1_000, 3],
    ]);
  });

  it('never admits more than its limit in one window, and refuses only what does not fit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), requestsOf(300, 5), (limit, requests) => {
        const rule = ruleOf({ limit, period: 'second' });
        let state = fixedWindow.at(undefined, rule, T0);
        for (const [at, units] of requests) {
          state = fixedWindow.at(state, rule, at);
          const verdict = verdictOf(fixedWindow, 'key', rule, state, units, at);
          expect(verdict.fits).toBe(state.used + units <= limit);
          expect(verdict.resetMs).toBe(windowAt('second', at).end);
          if (verdict.fits) state = fixedWindow.charged(state, rule, units);
          expect(state.used).toBeLessThanOrEqual(limit);
        }
      }),
    );
  });
});

describe('core: state records', () => {
  it('are brought up to date and charged in place, so a decision allocates no state', () => {
    const rules = [
      ruleOf({ limit: 5, period: 'second' }),
      ruleOf({ limit: 5, period: 'second', algorithm: 'sliding' }),
      ruleOf({ limit: 5, period: 'second', algorithm: 'tokenBucket' }),
    ];
    for (const rule of rules) {
      const algorithm = ALGORITHM_OF[rule.algorithm];
      const state = algorithm.at(undefined, rule, T0);
      expect(algorithm.charged(state, rule, 2)).toBe(state);
      expect(algorithm.at(state, rule, T0 + 10)).toBe(state);
      expect(algorithm.at(state, rule, T0 + 5_000)).toBe(state);
      expect(algorithm.used(algorithm.charged(state, rule, 1), rule)).toBe(1);
    }
  });
});

describe('core: a sliding window', () => {
  it('never admits more than its limit in any span of one period', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), requestsOf(400, 3), (limit, requests) => {
        const rule = ruleOf({ limit, period: 'second', algorithm: 'sliding' });
        const admitted = drive(slidingWindow, rule, requests);
        for (const [from] of admitted)
          expect(unitsIn(admitted, from, from + slidingPeriodMs('second'))).toBeLessThanOrEqual(limit);
      }),
    );
  });

  it('frees a place once its slot leaves, SLOTS + 1 slots after it began, and says when', () => {
    const rule = ruleOf({ limit: 1, period: 'minute', algorithm: 'sliding' });
    // A state is brought up to date in place: each instant looks at a window of its own.
    const chargedAtT0 = () => slidingWindow.charged(slidingWindow.at(undefined, rule, T0), rule, 1);
    const leaves = T0 + (SLOTS + 1) * slotMs('minute');
    expect(
      verdictOf(slidingWindow, 'key', rule, slidingWindow.at(chargedAtT0(), rule, leaves - 1), 1, leaves - 1),
    ).toMatchObject({
      fits: false,
      retryMs: leaves,
    });
    expect(slidingWindow.spent(chargedAtT0(), rule, leaves - 1)).toBe(false);
    expect(slidingWindow.spent(chargedAtT0(), rule, leaves)).toBe(true);
    expect(
      verdictOf(slidingWindow, 'key', rule, slidingWindow.at(chargedAtT0(), rule, leaves), 1, leaves).fits,
    ).toBe(true);
  });
});

describe('core: a token bucket', () => {
  it('admits at most burst + limit × T / period over any interval T', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 20 }),
        requestsOf(700, 4),
        (limit, burst, requests) => {
          const rule = ruleOf({ limit, period: 'second', algorithm: 'tokenBucket', burst });
          const admitted = drive(tokenBucket, rule, requests);
          for (const [from] of admitted)
            for (const [to] of admitted) {
              if (to < from) continue;
              const most = burst + Math.floor((limit * (to - from)) / 1_000);
              expect(unitsIn(admitted, from, to + 1)).toBeLessThanOrEqual(most);
            }
        },
      ),
    );
  });

  it('says when it holds the refused cost, in whole seconds, and is spent once full again', () => {
    const rule = ruleOf({ limit: 2, period: 'second', algorithm: 'tokenBucket', burst: 4 });
    const empty = tokenBucket.charged(tokenBucket.at(undefined, rule, T0), rule, 4);
    const verdict = verdictOf(tokenBucket, 'key', rule, tokenBucket.at(empty, rule, T0 + 500), 3, T0 + 500);
    expect(verdict).toMatchObject({
      fits: false,
      room: 1,
      remaining: 1,
      resetMs: T0 + 500,
      retryMs: T0 + 2_000,
    });
    expect(tokenBucket.spent(empty, rule, T0 + 1_999)).toBe(false);
    expect(tokenBucket.spent(empty, rule, T0 + 2_000)).toBe(true);
  });
});

describe('core: a concurrency limit', () => {
  it('holds at most its limit in flight, one place per request whatever its cost', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.boolean(), { maxLength: 60 }),
        (limit, steps) => {
          const rule = ruleOf({ limit, algorithm: 'concurrency' } as LimitInput);
          let places = concurrency.at(undefined, rule, T0);
          for (const enter of steps) {
            if (!enter) {
              if (places > 0) places = released(places);
              continue;
            }
            const verdict = verdictOf(concurrency, 'key', rule, places, 1, T0);
            expect(verdict.fits).toBe(places < limit);
            expect(verdict.resetMs).toBe(T0 + 1_000);
            if (verdict.fits) places = concurrency.charged(places, rule, 1);
            expect(places).toBeLessThanOrEqual(limit);
          }
          expect(concurrency.spent(places, rule, T0)).toBe(places === 0);
        },
      ),
    );
  });
});

describe('core: a balance', () => {
  const balance: Balance = { epoch: 1, window: 0, granted: 10, floor: 0, refill: null, lowAt: null };

  it('never spends more than it holds, and settling it again at the same instant changes nothing', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 30 }), (costs) => {
        let held = balanceAt(undefined, balance, T0);
        let spent = 0;
        for (const cost of costs) {
          const before = { ...held };
          const verdict = balanceVerdictOf('key', balance, held, cost, T0);
          expect(verdict.fits).toBe(10 - spent >= cost);
          expect(verdict.before.remaining).toBe(10 - spent);
          if (verdict.fits) {
            held = balanceCharged(held, cost);
            spent += cost;
          }
          expect(balanceAt(before, balance, T0)).toEqual(before);
        }
        expect(spent).toBeLessThanOrEqual(10);
      }),
    );
  });
});

describe('core: the combiner', () => {
  const burst = ruleOf({ limit: 3, period: 'second', name: 'burst' });
  const hour = ruleOf({ limit: 10, period: 'hour', name: 'hour' });
  const limitOf = (rule: LimitRule, room: number, units: number, resetMs: number) =>
    countedVerdict('key', rule, room, units, resetMs, resetMs);
  const balanceOf = (scope: 'key' | 'consumer', remaining: number, cost: number) => ({
    fits: remaining >= cost,
    before: { scope, remaining, refillMs: null },
  });

  it('refuses by the limit whose retry is latest, the first of equals, and reports every limit as it stands', () => {
    const refused = refusalOf([limitOf(burst, 0, 1, T0 + 1_000), limitOf(hour, 0, 1, T0 + 3_600_000)], [])!;
    expect(refused.limit).toEqual({ scope: 'key', rule: hour, remaining: 0, resetMs: T0 + 3_600_000 });
    expect(refused.states.map((s) => s.rule.name)).toEqual(['burst', 'hour']);
    const tie = refusalOf([limitOf(burst, 1, 2, T0 + 1_000), limitOf(hour, 0, 2, T0 + 1_000)], [])!;
    expect(tie.limit).toMatchObject({ rule: burst, remaining: 1 });
  });

  it('refuses by a balance rather than a limit when both fall short, the key’s before its consumer’s', () => {
    const refused = refusalOf(
      [limitOf(burst, 0, 2, T0 + 1_000)],
      [balanceOf('key', 5, 2), balanceOf('consumer', 1, 2), balanceOf('key', 0, 2)],
    )!;
    expect(refused).toMatchObject({
      allowed: false,
      limit: undefined,
      balance: { scope: 'consumer', remaining: 1 },
    });
    expect(refusalOf([limitOf(burst, 3, 2, T0 + 1_000)], [balanceOf('key', 2, 2)])).toBeUndefined();
  });

  it('admits reporting the limit with the fewest left (the later window of equals) and the lowest balance', () => {
    const burstLeft = { scope: 'key' as const, rule: burst, remaining: 2, resetMs: T0 + 1_000 };
    const hourLeft = { scope: 'consumer' as const, rule: hour, remaining: 2, resetMs: T0 + 3_600_000 };
    const admitted = admissionOf(
      [burstLeft, hourLeft],
      [
        { scope: 'key', remaining: 4, refillMs: null },
        { scope: 'consumer', remaining: 4, refillMs: null },
      ],
    );
    expect(admitted).toEqual({
      allowed: true,
      limit: hourLeft,
      balance: { scope: 'key', remaining: 4, refillMs: null },
      states: [burstLeft, hourLeft],
    });
    expect(admissionOf([], [])).toEqual({ allowed: true, limit: undefined, balance: undefined, states: [] });
  });

  it('has a module for every algorithm a plan may name', () => {
    expect(Object.keys(ALGORITHM_OF).sort()).toEqual(['concurrency', 'fixed', 'sliding', 'tokenBucket']);
  });
});
