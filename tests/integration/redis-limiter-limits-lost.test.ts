/**
 * Token buckets, windows' counts and concurrency limits when Redis loses keys while it stays up
 * (docs/decisions/0125, 0059), against a private redis-server this file flushes, over limiters as the
 * service runs them: a bucket lost mid-use admits no more than `burst + limit × T / period` over the
 * whole interval, a window no more than its limit, and places lost leave no more than `limit` requests
 * in flight. Time is the limiters' injectable clock.
 */
import type { Decision } from '../../src/limits/rate-limiter.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import type { Plan } from '../../src/plans/plan.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';
import { keyOnly, plan } from '../helpers/plans.js';

const PREFIX = 'lost:';
const fleet = limiterReplicasFor(PREFIX);
/** The replicas' clock, by which a bucket refills: moved by the tests, never waited for. */
let now = Date.now();
const clock = () => now;
const replica = () => fleet.replica({ clock });
let keys = 0;
const newKey = () => `key_${keys++}_${Date.now()}`;

/** A request for a place of `p`'s concurrency limit, on a replica for a key, at the clock's time. */
const placeTaker =
  (p: Plan) =>
  (r: RedisRateLimiter, keyId: string): Promise<Decision> =>
    Promise.resolve(r.consume(keyOnly(keyId, p), 1, now));

const losses: [string, (keyId: string) => Promise<unknown>][] = [
  ['FLUSHALL', () => fleet.admin.flushall()],
  ['FLUSHDB', () => fleet.admin.flushdb()],
  ['a deleted count', async (keyId) => fleet.admin.del(...(await fleet.admin.keys(`${PREFIX}{${keyId}}:*`)))],
];

describe('a token bucket that Redis loses', () => {
  // One unit a second, a burst of 10.
  const bucket = plan({ limit: 60, period: 'minute', algorithm: 'tokenBucket', burst: 10 });

  /** Units admitted when `replicas` send `n` requests one after the other, in turn, at the clock's time. */
  async function send(replicas: readonly RedisRateLimiter[], keyId: string, n: number): Promise<number> {
    let admitted = 0;
    for (let i = 0; i < n; i++)
      if ((await replicas[i % replicas.length]!.consume(keyOnly(keyId, bucket), 1, now)).allowed) admitted++;
    return admitted;
  }

  it.each(losses)('admits no more than its burst and refill over the interval after %s', async (_, lose) => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const keyId = newKey();
    const start = now;
    let admitted = await send([a, b], keyId, 20); // the burst: 10
    // Three seconds' refill, taken by b alone: a's record says empty three seconds ago, which refilled
    // is three units more than the bucket holds; b's is the bucket as it is.
    now += 3_000;
    admitted += await send([b], keyId, 5); // 3
    await lose(keyId);
    // a finds the bucket gone first, c never decided there: neither may bring it back above b's record.
    admitted += await send([a, c, b], keyId, 12);
    now += 5_000;
    admitted += await send([c, a, b], keyId, 12); // 5
    const allowed = 10 + (60 * (now - start)) / 60_000;
    expect(admitted).toBeLessThanOrEqual(allowed);
    expect(admitted).toBe(18);
  });

  it('is not drawn after a flush by a replica that has not put its own record back yet', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const keyId = newKey();
    // Each replica's record is the bucket as its last decision left it: c's 8, b's 4, a's (the last) 0.
    let admitted = await send([c], keyId, 2);
    admitted += await send([b], keyId, 4);
    admitted += await send([a], keyId, 4);
    expect(admitted).toBe(10);
    const [bucketKey] = await fleet.admin.keys(`${PREFIX}{${keyId}}:*bucket*`);
    await fleet.admin.flushall();
    // b finds the loss first and puts back its record: 4, above what a knows the bucket holds.
    const first = b.consume(keyOnly(keyId, bucket), 1, now);
    while ((await fleet.admin.hget(bucketKey!, 'u')) !== '4') await new Promise((r) => setTimeout(r, 5));
    // c has not learned of the flush yet, and its record (8) is above the 4 put back.
    admitted += await send([c], keyId, 4);
    if ((await first).allowed) admitted++;
    admitted += await send([a, b, c], keyId, 6);
    expect(admitted).toBe(10);
  });

  it('is put back within a second and a half of a flush, with no request asking', async () => {
    const [a, b] = [await replica(), await replica()];
    const keyId = newKey();
    expect(await send([a, b], keyId, 12)).toBe(10);
    const [bucketKey] = await fleet.admin.keys(`${PREFIX}{${keyId}}:*bucket*`);
    await fleet.admin.flushall();
    const flushedAt = Date.now();
    while ((await fleet.admin.hget(bucketKey!, 'u')) !== '0') {
      expect(Date.now() - flushedAt).toBeLessThan(1_500);
      await new Promise((r) => setTimeout(r, 20));
    }
  });
});

describe('a window’s count that Redis loses', () => {
  const thirtyAMinute = plan({ limit: 30, period: 'minute' });

  /** Requests admitted when `replicas` send `n` requests one after the other, in turn. */
  async function send(replicas: readonly RedisRateLimiter[], keyId: string, n: number): Promise<number> {
    let admitted = 0;
    for (let i = 0; i < n; i++)
      if ((await replicas[i % replicas.length]!.consume(keyOnly(keyId, thirtyAMinute), 1, now)).allowed)
        admitted++;
    return admitted;
  }

  it('is not decided on after a flush by a replica that has not put its own places back yet', async () => {
    // Early in a minute: the count is sure to be there for the whole test.
    now = Math.ceil(now / 60_000) * 60_000 + 1_000;
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const keyId = newKey();
    // a holds 10 places in the count, b 10, c 5.
    let admitted = (await send([a], keyId, 10)) + (await send([b], keyId, 10)) + (await send([c], keyId, 5));
    expect(admitted).toBe(25);
    // Beside the count: its lease book and the plan mark of the subject's counts (plan-switches.ts).
    const [countKey] = (await fleet.admin.keys(`${PREFIX}{${keyId}}:*`)).filter((k) => !k.endsWith(':plan'));
    expect(countKey).not.toMatch(/:lease$/);
    await fleet.admin.flushall();
    // b finds the loss first and puts back its 10: at least c's 5, yet short of a's and c's places.
    const first = b.consume(keyOnly(keyId, thirtyAMinute), 1, now);
    while (Number((await fleet.admin.get(countKey!)) ?? '0') < 10) await new Promise((r) => setTimeout(r, 5));
    // c has not learned of the flush yet: a count of 10 holds its 5, and only 5 requests are left.
    admitted += await send([c], keyId, 10);
    if ((await first).allowed) admitted++;
    admitted += await send([a, b, c], keyId, 6);
    expect(admitted).toBe(30);
  });
});

describe('a concurrency limit whose places Redis loses', () => {
  const take = placeTaker(plan({ limit: 4, algorithm: 'concurrency' }));

  it.each(losses)('keeps no more than its limit in flight after %s', async (_, lose) => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const keyId = newKey();
    // Two requests in flight on each of a and b; c was refused, and holds none.
    const held = [await take(a, keyId), await take(b, keyId), await take(a, keyId), await take(b, keyId)];
    expect(held.map((d) => d.allowed)).toEqual([true, true, true, true]);
    expect((await take(c, keyId)).allowed).toBe(false);
    await lose(keyId);
    // c asks first: it knows the count was there, and must not find four free places.
    const after = [];
    for (const r of [c, a, b, c, a, b]) after.push(await take(r, keyId));
    expect(after.filter((d) => d.allowed)).toHaveLength(0);
    // A request ends: its place, and that one only, is free again.
    held[0]!.release!();
    const next = [];
    for (const r of [c, b, a, c]) next.push(await take(r, keyId));
    expect(next.filter((d) => d.allowed)).toHaveLength(1);
  });

  it('is not taken after a flush by a replica that has not learned of it, before every holder put back', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const keyId = newKey();
    // Two requests in flight on each of a and b; c never decided there.
    const held = [await take(a, keyId), await take(a, keyId), await take(b, keyId), await take(b, keyId)];
    expect(held.map((d) => d.allowed)).toEqual([true, true, true, true]);
    const [countKey] = await fleet.admin.keys(`${PREFIX}{${keyId}}:*concurrency`);
    await fleet.admin.flushall();
    // a finds the loss first and puts back its 2; b, asking nothing, puts back at its next marker check.
    const first = take(a, keyId);
    while ((await fleet.admin.hlen(countKey!)) === 0) await new Promise((r) => setTimeout(r, 5));
    // c has not learned of the flush yet: two places look free, yet b's two requests still hold them.
    const late = await take(c, keyId);
    expect([(await first).allowed, late.allowed]).toEqual([false, false]);
    // A request ends: its place, and that one only, is free again.
    held[2]!.release!();
    const next = [];
    for (const r of [c, b, a, c]) next.push(await take(r, keyId));
    expect(next.filter((d) => d.allowed)).toHaveLength(1);
  });
});

describe('a concurrency call that Redis ran but answered too late', () => {
  const take = placeTaker(plan({ limit: 3, algorithm: 'concurrency' }));

  it('has the place it took given back while requests keep coming to its replica', async () => {
    // a gives a call 300 ms: Redis paused longer answers it too late, then runs it.
    const a = await fleet.replica({ clock }, 300);
    const b = await replica();
    const keyId = newKey();
    const held = [await take(a, keyId), await take(b, keyId)];
    expect(held.map((d) => d.allowed)).toEqual([true, true]);
    fleet.server.pause();
    const late = take(a, keyId);
    await expect(late).rejects.toThrow();
    fleet.server.resume();
    // Redis counts a place nobody holds: all three are taken.
    const [countKey] = await fleet.admin.keys(`${PREFIX}{${keyId}}:*concurrency`);
    const counted = Object.entries(await fleet.admin.hgetall(countKey!)).filter(([field]) =>
      field.startsWith('p:'),
    );
    expect(counted.reduce((sum, [, places]) => sum + Number(places), 0)).toBe(3);
    // Requests keep coming to a, one every millisecond or so, each asking Redis while the last may be
    // out: at its check each second, a puts back the places it holds once the calls it has out are
    // answered, and those requests must not keep it from doing so.
    const started = performance.now();
    let admitted: Decision | undefined;
    let ms = 0;
    await new Promise<void>((resolve) => {
      const arrivals = setInterval(() => {
        ms = performance.now() - started;
        if (admitted !== undefined || ms > 10_000) {
          clearInterval(arrivals);
          resolve();
          return;
        }
        void take(a, keyId).then(
          (decision) => {
            if (decision.allowed && admitted === undefined) admitted = decision;
            else decision.release?.();
          },
          // A call past a's deadline on a loaded machine: that request is not admitted, as one refused.
          () => undefined,
        );
      }, 1);
    });
    console.log(`the place of a call answered too late was free again after ${Math.round(ms)} ms`);
    // A hang guard, not a speed bound.
    expect(admitted).toBeDefined();
    // Exactly that place was free: the next request is refused.
    expect((await take(b, keyId)).allowed).toBe(false);
    for (const d of [...held, admitted!]) d.release!();
  }, 30_000);
});
