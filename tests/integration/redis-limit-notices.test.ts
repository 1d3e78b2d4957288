/**
 * What the Redis limiter tells the outbox as it charges (docs/guides/webhooks.md, docs/decisions/0052), against a
 * private redis-server with replicas as the service runs them (leases, reclaims): `quota.threshold` is
 * told by the request whose place in the count reaches the threshold, on the replica that charged it,
 * whether the place came from a lease or from a call; `credits.low` and `credits.exhausted` from the
 * balance's state after each call. Every replica tells each at most once; the outbox's once-keys make
 * one event of what several replicas tell.
 */
import { LimitNotices } from '../../src/limits/limit-notices.js';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import type { Decision } from '../../src/limits/rate-limiter.js';
import { balanceSet } from '../../src/plans/balance.js';
import type { Subject } from '../../src/plans/subject.js';
import { windowAt } from '../../src/plans/window.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { COUNTING_REDIS } from '../helpers/services.js';
import type { NewEvent } from '../../src/store/outbox.js';
import { plan } from '../helpers/plans.js';
import { RedisServer } from '../helpers/redis-server.js';
import { HOUR_MS, TestClock } from '../helpers/test-clock.js';

const metrics = new Metrics();
let server: RedisServer;
const opened: { redis: RedisConnections; limiter: RedisRateLimiter }[] = [];
/** The replicas' clock, for their windows and leases alike: moved to an hour's start, not waited for. */
const testClock = new TestClock();
const clock = () => testClock.now();

beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await Promise.all(
    opened.map(async ({ redis, limiter }) => {
      await limiter.close();
      await redis.close();
    }),
  );
  await server.destroy();
});

interface Replica {
  readonly limiter: RedisRateLimiter;
  readonly notices: LimitNotices;
}

async function replica(): Promise<Replica> {
  const redis = connectRedis(
    { redisUrl: server.url, redisClusterNodes: undefined },
    createLogger('silent'),
    COUNTING_REDIS,
  );
  expect(await redis.ready(5_000)).toBe(true);
  const notices = new LimitNotices();
  const limiter = new RedisRateLimiter(redis.client, 'notices:', metrics, {
    subscriber: redis.subscriber,
    notices,
    clock,
  });
  await limiter.ready();
  opened.push({ redis, limiter });
  return { limiter, notices };
}

const thresholdOf = (event: NewEvent) => (JSON.parse(event.data) as { threshold: number }).threshold;

it('tells 80 % and 100 % of a consumer’s limit at the charges that reach them, on three replicas leasing, each once', async () => {
  const replicas = await Promise.all([replica(), replica(), replica()]);
  const limit = 30_000;
  const consumer: Subject = { scope: 'consumer', id: 'con_hot', plan: plan({ limit, period: 'hour' }) };
  const keys = Array.from({ length: 6 }, (_, k): Subject[] => [
    { scope: 'key', id: `key_hot_${k}`, plan: plan() },
    consumer,
  ]);
  // One window: a second into an hour.
  testClock.after(HOUR_MS, 1_000);
  const start = clock();
  let atOnce = 0;
  /** Per replica: the turn in which it first admitted a request leaving ≤ 20 % (then none), and those in which it told 80. */
  const reached = replicas.map(() => ({
    firstAt80: -1,
    firstAtFull: -1,
    told80: [] as number[],
    told100: [] as number[],
  }));
  const told: NewEvent[] = [];
  // Each replica sends turns of 25 requests until the consumer refuses; after each turn it hands over what it noticed.
  await Promise.all(
    replicas.map(async ({ limiter, notices }, n) => {
      for (let turn = 0; ; turn++) {
        const asked = Array.from({ length: 25 }, (_, i) => limiter.consume(keys[(i + n) % 6]!, 1, clock()));
        atOnce += asked.filter((d) => !(d instanceof Promise)).length;
        const decisions: Decision[] = await Promise.all(asked);
        const admitted = decisions.filter((d) => d.allowed);
        const mine = reached[n]!;
        if (mine.firstAt80 < 0 && admitted.some((d) => d.limit!.remaining <= limit / 5))
          mine.firstAt80 = turn;
        if (mine.firstAtFull < 0 && admitted.some((d) => d.limit!.remaining === 0)) mine.firstAtFull = turn;
        for (const event of notices.take(clock())) {
          told.push(event);
          (thresholdOf(event) === 80 ? mine.told80 : mine.told100).push(turn);
        }
        if (decisions.some((d) => !d.allowed)) return;
      }
    }),
  );
  // Leased units decided most requests: the thresholds were reached through leases and calls alike.
  expect(atOnce).toBeGreaterThan(limit / 2);
  for (const mine of reached) {
    // A replica tells 80 in the turn its first request at ≤ 20 % was admitted (if it admitted one), and never twice.
    expect(mine.told80).toEqual(mine.firstAt80 < 0 ? [] : [mine.firstAt80]);
    expect(mine.told100).toEqual(mine.firstAtFull < 0 ? [] : [mine.firstAtFull]);
  }
  // The replica that charged the unit filling the window told 100 (after a reclaim, another may fill it again).
  expect(reached.some((mine) => mine.told100.length === 1)).toBe(true);
  const window = windowAt('hour', start).start;
  expect(new Set(told.map((e) => e.once!.key))).toEqual(
    new Set([80, 100].map((t) => `quota.threshold:consumer:con_hot:hour:${limit}:${window}:${t}`)),
  );
  expect(told.map((e) => e.type).every((type) => type === 'quota.threshold')).toBe(true);
});

it('tells a shared balance low and exhausted from the state each call leaves, once per replica', async () => {
  const replicas = await Promise.all([replica(), replica()]);
  const now = clock();
  const balance = balanceSet(0, 200, { amount: 200, interval: 'month', dayOfMonth: 1 }, null, now);
  const consumer: Subject = { scope: 'consumer', id: 'con_credits', plan: plan(), balance };
  const keys = [0, 1].map((k): Subject[] => [
    { scope: 'key', id: `key_credits_${k}`, plan: plan() },
    consumer,
  ]);
  const told: { replica: number; type: string; remaining: number; once: string }[] = [];
  let refused = 0;
  // Cost 3: 200 = 66 × 3 + 2, so the balance ends at 2, unable to pay a request: exhausted by refusal.
  for (let round = 0; refused === 0; round++) {
    const decisions = await Promise.all(
      replicas.map(({ limiter }, n) => limiter.consume(keys[n]!, 3, clock())),
    );
    refused += decisions.filter((d) => !d.allowed).length;
    replicas.forEach(({ notices }, n) =>
      told.push(
        ...notices.take(clock()).map((e) => ({
          replica: n,
          type: e.type,
          remaining: (JSON.parse(e.data) as { remaining: number }).remaining,
          once: e.once!.key,
        })),
      ),
    );
  }
  // Low below ⌈200 / 10⌉ = 20: at 17 or fewer, by whichever replica saw it; exhausted at 2.
  const low = told.filter((t) => t.type === 'credits.low');
  const exhausted = told.filter((t) => t.type === 'credits.exhausted');
  expect(low.length).toBeGreaterThanOrEqual(1);
  expect(low.every((t) => t.remaining < 20 && t.remaining >= 2)).toBe(true);
  expect(exhausted.map((t) => t.remaining)).toEqual(exhausted.map(() => 2));
  for (const n of [0, 1]) {
    expect(low.filter((t) => t.replica === n).length).toBeLessThanOrEqual(1);
    expect(exhausted.filter((t) => t.replica === n).length).toBeLessThanOrEqual(1);
  }
  expect(new Set(told.map((t) => t.once))).toEqual(
    new Set(
      ['credits.low', 'credits.exhausted'].map(
        (type) => `${type}:consumer:con_credits:1:${balance.window}:200`,
      ),
    ),
  );
});
