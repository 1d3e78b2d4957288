import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { Decision } from '../../src/limits/rate-limiter.js';
import { keyOnly, plan } from '../helpers/plans.js';
import { windowAt } from '../../src/plans/window.js';

/** Tuesday 2026-03-03 10:00:00.000 UTC. */
const T0 = Date.UTC(2026, 2, 3, 10, 0, 0, 0);

const limiters: MemoryRateLimiter[] = [];
function limiter(): MemoryRateLimiter {
  const l = new MemoryRateLimiter();
  limiters.push(l);
  return l;
}
afterAll(() => Promise.all(limiters.map((l) => l.close())));

describe('MemoryRateLimiter, a token bucket', () => {
  it('admits a full burst at once, then refills continuously at limit per period', () => {
    const l = limiter();
    const p = plan({ limit: 2, period: 'second', algorithm: 'tokenBucket', burst: 5 });
    const at = (ms: number, cost = 1) => l.consume(keyOnly('k', p), cost, T0 + ms);
    expect(Array.from({ length: 6 }, () => at(0).allowed)).toEqual([true, true, true, true, true, false]);
    // 2 a second: one unit every 500 ms, none sooner.
    expect(at(499).allowed).toBe(false);
    const bucket = { scope: 'key', rule: p.limits[0]!, remaining: 0, resetMs: T0 + 1_000 } as const;
    expect(at(500)).toEqual<Decision>({ allowed: true, limit: bucket, balance: undefined, states: [bucket] });
    expect(at(999).allowed).toBe(false);
    // A refusal names when the bucket will hold the refused cost, in whole seconds.
    expect(at(1_000, 3)).toEqual<Decision>({
      allowed: false,
      limit: { scope: 'key', rule: p.limits[0]!, remaining: 1, resetMs: T0 + 2_000 },
      balance: undefined,
      // As it stands, it holds one unit now.
      states: [{ scope: 'key', rule: p.limits[0]!, remaining: 1, resetMs: T0 + 1_000 }],
    });
    expect(at(2_000, 3).allowed).toBe(true);
    // Idle long enough, it holds its burst again, never more.
    expect(Array.from({ length: 6 }, () => at(60_000).allowed).filter(Boolean)).toHaveLength(5);
  });

  it('a bucket holding a unit reports it with a reset of now (RateLimit t=0)', () => {
    const l = limiter();
    const p = plan({ limit: 10, period: 'minute', algorithm: 'tokenBucket' });
    expect(l.consume(keyOnly('k', p), 1, T0).limit).toEqual({
      scope: 'key',
      rule: p.limits[0]!,
      remaining: 9,
      resetMs: T0,
    });
  });

  it('never admits more than burst + limit × T / period units over any interval', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 30 }),
        fc.constantFrom('second' as const, 'minute' as const),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 1, max: 4 })), {
          minLength: 1,
          maxLength: 120,
        }),
        (limit, burst, period, steps) => {
          const l = limiter();
          const p = plan({ limit, period, algorithm: 'tokenBucket', burst });
          const periodMs = period === 'second' ? 1_000 : 60_000;
          let now = T0;
          const admitted: [number, number][] = [];
          for (const [gap, cost] of steps) {
            now += gap * (periodMs / 1_000);
            if (l.consume(keyOnly('k', p), cost, now).allowed) admitted.push([now, cost]);
          }
          for (const [from] of admitted)
            for (const [to] of admitted) {
              if (to < from) continue;
              const units = admitted.filter(([t]) => t >= from && t <= to).reduce((a, [, c]) => a + c, 0);
              expect(units).toBeLessThanOrEqual(burst + Math.floor((limit * (to - from)) / periodMs));
            }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a changed plan keeps what the bucket holds', () => {
    const l = limiter();
    const before = plan({ limit: 1, period: 'minute', algorithm: 'tokenBucket', burst: 3 });
    const after = plan({ limit: 2, period: 'minute', algorithm: 'tokenBucket', burst: 3 });
    for (let i = 0; i < 3; i++) expect(l.consume(keyOnly('k', before), 1, T0).allowed).toBe(true);
    expect(l.consume(keyOnly('k', after), 1, T0).allowed).toBe(false);
    // Now refilled at the new rate: a unit every 30 s.
    expect(l.consume(keyOnly('k', after), 1, T0 + 30_000).allowed).toBe(true);
  });
});

describe('MemoryRateLimiter, a concurrency limit', () => {
  it('holds one place per request whatever its cost, until it is released', () => {
    const l = limiter();
    const p = plan({ limit: 2, algorithm: 'concurrency' }, { limit: 100, period: 'minute' });
    const first = l.consume(keyOnly('k', p), 10, T0);
    const second = l.consume(keyOnly('k', p), 10, T0);
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    const third = l.consume(keyOnly('k', p), 1, T0);
    expect(third).toEqual<Decision>({
      allowed: false,
      limit: { scope: 'key', rule: p.limits[0]!, remaining: 0, resetMs: T0 + 1_000 },
      balance: undefined,
      states: [
        { scope: 'key', rule: p.limits[0]!, remaining: 0, resetMs: T0 + 1_000 },
        { scope: 'key', rule: p.limits[1]!, remaining: 80, resetMs: windowAt('minute', T0).end },
      ],
    });
    expect(third.release).toBeUndefined();
    // A place frees as soon as a request ends; releasing twice frees it once.
    first.release!();
    first.release!();
    expect(l.consume(keyOnly('k', p), 1, T0).allowed).toBe(true);
    expect(l.consume(keyOnly('k', p), 1, T0).allowed).toBe(false);
    // The minute counted every admitted unit: 10 + 10 + 1.
    return expect(l.peek(keyOnly('k', p), T0)).resolves.toEqual([
      { scope: 'key', rule: p.limits[0]!, remaining: 0, resetMs: T0 + 1_000 },
      { scope: 'key', rule: p.limits[1]!, remaining: 79, resetMs: T0 + 60_000 },
    ]);
  });

  it('a request another limit refuses takes no place', () => {
    const l = limiter();
    const p = plan({ limit: 1, algorithm: 'concurrency' }, { limit: 1, period: 'hour' });
    const first = l.consume(keyOnly('k', p), 1, T0);
    first.release!();
    expect(l.consume(keyOnly('k', p), 1, T0 + 1).allowed).toBe(false);
    return expect(l.peek(keyOnly('k', p), T0 + 2)).resolves.toMatchObject([
      { remaining: 1 },
      { remaining: 0 },
    ]);
  });
});
