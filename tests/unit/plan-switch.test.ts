import fc from 'fast-check';
import { ALGORITHM_OF } from '../../src/limits/core/algorithms.js';
import { switchedStates, type CountedLimit } from '../../src/limits/core/plan-switch.js';
import { capacityOf, ruleOf, type LimitInput } from '../../src/plans/plan.js';

const T0 = Date.UTC(2026, 0, 1, 10);

/** A limit of `input` that has counted `units` at T0. */
function counted(input: LimitInput, units: number): CountedLimit {
  const rule = ruleOf(input);
  const algorithm = ALGORITHM_OF[rule.algorithm];
  const state = units === 0 ? undefined : algorithm.charged(algorithm.at(undefined, rule, T0), rule, units);
  return { rule, algorithm, state };
}

/** What each of `next` counts a second after T0, once switched to from `old`. */
function usedAfter(old: CountedLimit[], next: CountedLimit[]): number[] {
  const at = T0 + 1_000;
  return switchedStates(old, next, at).map((state, i) => {
    const { algorithm, rule } = next[i]!;
    return state === undefined ? 0 : algorithm.used(algorithm.at(state, rule, at), rule);
  });
}

describe('switchedStates: where a switched plan’s limits start', () => {
  it('carries the most any old limit of the same period and per spent, into every algorithm and match', () => {
    const old = [
      counted({ limit: 5, period: 'hour' }, 3),
      counted({ limit: 9, period: 'hour', algorithm: 'sliding' }, 4),
    ];
    const next = [
      counted({ limit: 5, period: 'hour', algorithm: 'sliding' }, 0),
      counted({ limit: 5, period: 'hour', algorithm: 'tokenBucket' }, 0),
      counted({ limit: 5, period: 'hour', name: 'v1', match: { pathPrefix: '/v1' } }, 0),
    ];
    // A token bucket of 5 an hour has refilled nothing whole in a second.
    expect(usedAfter(old, next)).toEqual([4, 4, 4]);
  });

  it('carries nothing across periods, into or out of a concurrency limit, or per visitor', () => {
    const old = [
      counted({ limit: 5, period: 'minute' }, 5),
      counted({ limit: 3, algorithm: 'concurrency' }, 2),
    ];
    const next = [
      counted({ limit: 5, period: 'hour' }, 0),
      counted({ limit: 3, algorithm: 'concurrency' }, 0),
      counted({ limit: 5, period: 'minute', per: 'clientAddress' }, 0),
    ];
    expect(usedAfter(old, next)).toEqual([0, 0, 0]);
  });

  it('never counts beyond a limit’s capacity, and never lowers what a limit already counts', () => {
    fc.assert(
      fc.property(fc.nat(20), fc.nat(20), fc.integer({ min: 1, max: 10 }), (spent, own, limit) => {
        const next = counted({ limit, period: 'hour' }, Math.min(own, limit));
        const [used] = usedAfter([counted({ limit: 20, period: 'hour' }, spent)], [next]);
        expect(used).toBe(Math.max(Math.min(own, limit), Math.min(spent, capacityOf(next.rule))));
      }),
    );
  });
});
