/**
 * Token buckets and concurrency limits in the Redis limiter, against a private redis-server, over
 * replicas as the service runs them: a burst admitted exactly once and the refill held across
 * replicas, the same decisions as the embedded limiter's, places counted across replicas and given
 * back, and the places of a replica that stops renewing them given back after the lease.
 */
import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { Decision } from '../../src/limits/rate-limiter.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import type { Plan } from '../../src/plans/plan.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';
import { keyOnly, plan } from '../helpers/plans.js';
import { waitFor } from '../helpers/poll.js';

const PREFIX = 'buckets:';
const fleet = limiterReplicasFor(PREFIX);
/**
 * The replicas' clock, which a token bucket's refill and a place's lease are timed by (the script is
 * given the replica's time at the call, as windows are picked by the request's): moved by the tests.
 */
let now = Date.now();
const clock = () => now;
const replica = (concurrencyLeaseMs?: number) => fleet.replica({ clock, concurrencyLeaseMs });
let keys = 0;
const newKey = () => `key_${keys++}`;

/** `n` requests of `cost` at `nowMs` (the replicas' clock moved there), spread over `replicas` in turn, all at once. */
async function together(
  replicas: readonly RedisRateLimiter[],
  keyId: string,
  p: Plan,
  n: number,
  nowMs: number,
  cost = 1,
): Promise<Decision[]> {
  now = nowMs;
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      replicas[i % replicas.length]!.consume(keyOnly(keyId, p), cost, nowMs),
    ),
  );
}
const admitted = (decisions: readonly Decision[]) => decisions.filter((d) => d.allowed).length;

describe('a token bucket across replicas', () => {
  it('admits its burst exactly once, then exactly its refill, however many race for it', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    const keyId = newKey();
    const p = plan({ limit: 5, period: 'second', algorithm: 'tokenBucket', burst: 12 });
    const t = now;
    expect(admitted(await together(replicas, keyId, p, 60, t))).toBe(12);
    expect(admitted(await together(replicas, keyId, p, 60, t + 100))).toBe(0);
    // 5 a second: one every 200 ms, exactly, over any stretch.
    expect(admitted(await together(replicas, keyId, p, 60, t + 1_000))).toBe(5);
    expect(admitted(await together(replicas, keyId, p, 60, t + 1_399))).toBe(1);
    expect(admitted(await together(replicas, keyId, p, 60, t + 1_400))).toBe(1);
    expect(admitted(await together(replicas, keyId, p, 60, t + 11_400))).toBe(12);
    // A replica whose clock is behind never refills the bucket backwards or twice.
    expect(admitted(await together(replicas, keyId, p, 60, t + 11_000))).toBe(0);
  });

  it('decides as the embedded limiter does, request by request, whichever replica asks', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 80 }),
        fc.constantFrom('second' as const, 'minute' as const, 'hour' as const),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 1, max: 7 })), {
          minLength: 1,
          maxLength: 40,
        }),
        async (limit, burst, period, steps) => {
          const keyId = newKey();
          const p = plan(
            { limit, period, algorithm: 'tokenBucket', burst },
            { limit: 60, period: 'day', name: 'daily' },
          );
          const model = new MemoryRateLimiter();
          try {
            for (const [i, [gap, cost]] of steps.entries()) {
              now += gap;
              const expected = model.consume(keyOnly(keyId, p), cost, now);
              const got = await replicas[i % 3]!.consume(keyOnly(keyId, p), cost, now);
              expect({ allowed: got.allowed, limit: got.limit }).toEqual({
                allowed: expected.allowed,
                limit: expected.limit,
              });
            }
          } finally {
            await model.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it('peek reads the bucket without taking from it', async () => {
    const one = await replica();
    const keyId = newKey();
    const p = plan({ limit: 1, period: 'minute', algorithm: 'tokenBucket', burst: 3 });
    const t = now;
    expect(admitted(await together([one], keyId, p, 2, t))).toBe(2);
    expect(await one.peek(keyOnly(keyId, p), t + 30_000)).toEqual([
      { scope: 'key', rule: p.limits[0], remaining: 1, resetMs: t + 30_000 },
    ]);
    expect(await one.peek(keyOnly(keyId, p), t + 60_000)).toEqual([
      { scope: 'key', rule: p.limits[0], remaining: 2, resetMs: t + 60_000 },
    ]);
  });
});

describe('a concurrency limit across replicas', () => {
  it('admits at most its limit in flight, one place a request whatever its cost, and takes released places again', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    const keyId = newKey();
    const p = plan({ limit: 4, algorithm: 'concurrency' }, { limit: 1_000, period: 'hour' });
    const t = now;
    const first = await together(replicas, keyId, p, 30, t, 5);
    const held = first.filter((d) => d.allowed);
    expect(held).toHaveLength(4);
    const refused = first.find((d) => !d.allowed)!;
    expect(refused.limit).toEqual({ scope: 'key', rule: p.limits[0], remaining: 0, resetMs: t + 1_000 });
    // Two end: exactly two more get in, on whichever replica.
    held[0]!.release!();
    held[1]!.release!();
    held[1]!.release!();
    await waitFor(
      () => replicas[2]!.peek(keyOnly(keyId, p), t),
      (states) => states[0]!.remaining === 2,
    );
    expect(admitted(await together(replicas, keyId, p, 30, t, 5))).toBe(2);
    // The hour counted every admitted request's cost, places aside: 6 requests of 5.
    expect((await replicas[0]!.peek(keyOnly(keyId, p), t))[1]!.remaining).toBe(1_000 - 30);
  });

  it("keeps a live replica's places past the lease, and gives back those of a replica that stopped renewing within it", async () => {
    const leaseMs = 900;
    const live = await replica(leaseMs);
    // A replica that dies stops renewing: this one's clock stands still, so its renewals stop at the lease.
    const frozenAt = now;
    const dying = await fleet.replica({ clock: () => frozenAt, concurrencyLeaseMs: leaseMs });
    const keyId = newKey();
    const p = plan({ limit: 3, algorithm: 'concurrency' });
    expect((await live.consume(keyOnly(keyId, p), 1, now)).allowed).toBe(true);
    // The script times a place's lease by the caller's clock: the dying replica's stands at frozenAt.
    expect(admitted(await together([dying], keyId, p, 5, frozenAt))).toBe(2);
    expect((await live.consume(keyOnly(keyId, p), 1, now)).allowed).toBe(false);
    // Time passes in steps shorter than the lease: the live replica renews its place each time.
    const countKey = `${PREFIX}{${keyId}}:concurrency`;
    for (let step = 0; step < 4; step++) {
      now += leaseMs / 3;
      const due = now + leaseMs / 2;
      await waitFor(
        async () => Object.entries(await fleet.admin.hgetall(countKey)).map(([, v]) => Number(v)),
        (values) => values.some((v) => v >= due),
      );
    }
    // Past the dying replica's lease: its two places are back, the live one's is still held.
    expect(now).toBeGreaterThan(frozenAt + leaseMs);
    expect(admitted(await together([live], keyId, p, 5, now))).toBe(2);
  });
});
