import { Redis } from 'ioredis';
import { WINDOW_LEASES } from '../../src/limits/lease-book.js';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { windowAt } from '../../src/plans/window.js';
import { Metrics } from '../../src/ops/metrics.js';
import { createLogger } from '../../src/ops/logger.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { COUNTING_REDIS, REDIS_URL, testKeyPrefix } from '../helpers/services.js';
import { load, type LoadStats } from '../helpers/limiter-load.js';
import { waitFor } from '../helpers/poll.js';
import { RedisServer } from '../helpers/redis-server.js';
import { keyOnly, plan } from '../helpers/plans.js';
import type { Plan } from '../../src/plans/plan.js';

const prefix = testKeyPrefix();
const metrics = new Metrics();
const newClient = () =>
  new Redis(REDIS_URL, { enableAutoPipelining: true, enableOfflineQueue: false, lazyConnect: true });

// Five connections stand in for five replicas: each has its own socket and its own script cache state.
const clients = Array.from({ length: 5 }, newClient);
const limiters = clients.map((c) => new RedisRateLimiter(c, prefix, metrics));

beforeAll(() => Promise.all(clients.map((c) => c.connect())));
afterAll(async () => {
  const keys = await clients[0]!.keys(prefix + '*');
  if (keys.length > 0) await clients[0]!.del(...keys);
  await Promise.all(clients.map((c) => c.quit()));
});

describe('RedisRateLimiter', () => {
  it('admits exactly the limit when many more requests race over several connections', async () => {
    const limit = 137;
    const now = Date.now();
    const decisions = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        limiters[i % limiters.length]!.consume(keyOnly('key_exact', plan({ limit, period: 'hour' })), 1, now),
      ),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(limit);
    // Every admitted request got its own place in the count: remaining 136, 135, …, 0, once each.
    const remaining = decisions
      .filter((d) => d.allowed)
      .map((d) => d.limit!.remaining)
      .sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => i));
    // Refusals don't count: the stored count is the limit, not the number of attempts.
    const hourly = plan({ limit, period: 'hour' });
    expect(await limiters[0]!.peek(keyOnly('key_exact', hourly), now)).toEqual([
      { scope: 'key', rule: hourly.limits[0], remaining: 0, resetMs: windowAt('hour', now).end },
    ]);
  });

  it('counts down remaining and reports the window end as the reset time', async () => {
    const now = Date.now();
    const policy = plan({ limit: 3, period: 'day' });
    const seen = [];
    for (let i = 0; i < 4; i++)
      seen.push(await limiters[i % 2]!.consume(keyOnly('key_countdown', policy), 1, now));
    expect(seen.map((d) => [d.allowed, d.limit!.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(seen.every((d) => d.limit!.resetMs === windowAt('day', now).end)).toBe(true);
  });

  it('keeps keys and periods apart', async () => {
    const now = Date.now();
    await limiters[0]!.consume(keyOnly('key_a', plan({ limit: 1, period: 'minute' })), 1, now);
    expect(
      (await limiters[1]!.consume(keyOnly('key_a', plan({ limit: 1, period: 'minute' })), 1, now)).allowed,
    ).toBe(false);
    expect(
      (await limiters[1]!.consume(keyOnly('key_b', plan({ limit: 1, period: 'minute' })), 1, now)).allowed,
    ).toBe(true);
    expect(
      (await limiters[1]!.consume(keyOnly('key_a', plan({ limit: 1, period: 'hour' })), 1, now)).allowed,
    ).toBe(true);
  });

  it('peek reads without counting', async () => {
    const now = Date.now();
    const policy = plan({ limit: 2, period: 'week' });
    expect((await limiters[0]!.peek(keyOnly('key_peek', policy), now))[0]!.remaining).toBe(2);
    await limiters[0]!.consume(keyOnly('key_peek', policy), 1, now);
    for (let i = 0; i < 5; i++)
      expect((await limiters[i]!.peek(keyOnly('key_peek', policy), now))[0]!.remaining).toBe(1);
    expect((await limiters[0]!.consume(keyOnly('key_peek', policy), 1, now)).allowed).toBe(true);
  });

  it('starts a new count when a one-second window ends; the old counter expires 5 s after its window', async () => {
    const policy = plan({ limit: 2, period: 'second' });
    const first = Date.now();
    const results = [];
    for (let i = 0; i < 3; i++)
      results.push((await limiters[i]!.consume(keyOnly('key_second', policy), 1, first)).allowed);
    expect(results).toEqual([true, true, false]);
    // The next window, by the time the caller passes rather than by waiting for it.
    const next = windowAt('second', first).end + 5;
    expect((await limiters[3]!.consume(keyOnly('key_second', policy), 1, next)).allowed).toBe(true);
    const counter = `${prefix}{key_second}:second:${windowAt('second', first).start}`;
    // Redis answers between the two readings of the clock, so the expiry lies between them plus the TTL.
    const asked = Date.now();
    const ttl = await clients[0]!.pttl(counter);
    const answered = Date.now();
    expect(ttl).toBeGreaterThan(0);
    expect(asked + ttl).toBeLessThanOrEqual(windowAt('second', first).end + 5_000);
    expect(answered + ttl).toBeGreaterThanOrEqual(windowAt('second', first).end + 5_000);
  });

  it('names counters with the key id as hash tag', async () => {
    const now = Date.now();
    await limiters[0]!.consume(keyOnly('key_tag', plan({ limit: 5, period: 'month' })), 1, now);
    expect(await clients[0]!.exists(`${prefix}{key_tag}:month:${windowAt('month', now).start}`)).toBe(1);
  });

  it('handles limits up to 2^53 - 1', async () => {
    const limit = Number.MAX_SAFE_INTEGER;
    const d = await limiters[0]!.consume(keyOnly('key_huge', plan({ limit, period: 'hour' })), 1, Date.now());
    expect(d).toMatchObject({ allowed: true, limit: { remaining: limit - 1 } });
  });
});

// The connection the service itself opens (connectRedis), against a server whose statistics are ours.
describe('RedisRateLimiter on a private redis-server', () => {
  let server: RedisServer;
  let redis: RedisConnections;
  let client: RedisConnections['client'];
  let admin: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = connectRedis(
      { redisUrl: server.url, redisClusterNodes: undefined },
      createLogger('silent'),
      COUNTING_REDIS,
    );
    client = redis.client;
    admin = new Redis(server.url);
    expect(await redis.ready(5_000)).toBe(true);
  });
  afterAll(async () => {
    await Promise.all([redis.close(), admin.quit()]);
    await server.destroy();
  });

  /** Calls per command from INFO commandstats, e.g. {evalsha: 12, eval: 1}. */
  async function commandStats(): Promise<Record<string, number>> {
    const info = await admin.info('commandstats');
    return Object.fromEntries(
      [...info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]),
    );
  }

  it('costs one Redis command per decision, and one for all the decisions a key needs in one turn', async () => {
    const limiter = new RedisRateLimiter(client, 'cmd:', metrics);
    const policy = plan({ limit: 1000, period: 'hour' });
    await limiter.consume(keyOnly('key_warm', policy), 1, Date.now()); // the first call on a connection sends EVAL
    // A subject's first decision on a replica also sets the plan its counts are decided by (plan-switches.ts).
    for (const key of ['key_cmds', 'key_other']) await limiter.consume(keyOnly(key, policy), 1, Date.now());
    await admin.config('RESETSTAT');
    const n = 250;
    for (let i = 0; i < n; i++) await limiter.consume(keyOnly('key_cmds', policy), 1, Date.now());
    expect((await commandStats()).evalsha).toBe(n);
    // Requests that arrive together (one turn of the event loop) share one script call per key.
    await admin.config('RESETSTAT');
    const together = await Promise.all([
      ...Array.from({ length: n }, () => limiter.consume(keyOnly('key_cmds', policy), 1, Date.now())),
      ...Array.from({ length: 10 }, () => limiter.consume(keyOnly('key_other', policy), 1, Date.now())),
    ]);
    expect(together.every((d) => d.allowed)).toBe(true);
    const { evalsha, eval: evals, 'config|resetstat': _reset, ...inside } = await commandStats();
    expect(evalsha).toBe(2);
    expect(evals).toBeUndefined();
    // commandstats also lists what the script ran within the one EVALSHA: GET and INCRBY (both counts
    // exist: no PEXPIREAT), and HGET of the stamp a put-back after a loss leaves in the lease book
    // (docs/decisions/0059).
    expect(Object.keys(inside).sort()).toEqual(['get', 'hget', 'incrby']);
    // Each request still has its own place in the count.
    expect(together.slice(0, n).map((d) => d.limit!.remaining)).toEqual(
      Array.from({ length: n }, (_, i) => 1000 - n - 2 - i),
    );
    expect(await admin.get(`cmd:{key_cmds}:hour:${windowAt('hour', Date.now()).start}`)).toBe(
      String(2 * n + 1),
    );
  });

  it('writes the calls of one turn for several keys at once', async () => {
    const limiter = new RedisRateLimiter(client, 'write:', metrics);
    // Its one start-up read (Redis' restart marker) is done before the counting starts.
    await limiter.ready();
    const policy = plan({ limit: 1000, period: 'hour' });
    const keys = Array.from({ length: 8 }, (_, i) => `key_w${i}`);
    // Each key's first decision also sets the plan its counts are decided by (plan-switches.ts).
    for (const k of keys) await limiter.consume(keyOnly(k, policy), 1, Date.now());
    await admin.config('RESETSTAT');
    const decisions = await Promise.all(keys.map((k) => limiter.consume(keyOnly(k, policy), 1, Date.now())));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    const stats = await admin.info('stats');
    // Eight script calls in Redis, read from the socket in one go; the other read is this INFO.
    expect((await commandStats()).evalsha).toBe(8);
    expect(Number(/total_reads_processed:(\d+)/.exec(stats)?.[1])).toBe(2);
  });

  it('admits a batch in arrival order up to what the window holds, and counts only those', async () => {
    const limiter = new RedisRateLimiter(client, 'batch:', metrics);
    const policy = plan({ limit: 10, period: 'hour' });
    for (let i = 0; i < 4; i++) await limiter.consume(keyOnly('key_b', policy), 1, Date.now());
    const burst = await Promise.all(
      Array.from({ length: 9 }, () => limiter.consume(keyOnly('key_b', policy), 1, Date.now())),
    );
    expect(burst.map((d) => [d.allowed, d.limit!.remaining])).toEqual([
      [true, 5],
      [true, 4],
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
      [false, 0],
    ]);
    expect(await admin.get(`batch:{key_b}:hour:${windowAt('hour', Date.now()).start}`)).toBe('10');
    // A full window refuses a whole batch without counting it.
    const refused = await Promise.all(
      Array.from({ length: 3 }, () => limiter.consume(keyOnly('key_b', policy), 1, Date.now())),
    );
    expect(refused.every((d) => !d.allowed && d.limit!.remaining === 0)).toBe(true);
    expect(await admin.get(`batch:{key_b}:hour:${windowAt('hour', Date.now()).start}`)).toBe('10');
  });

  it('falls back to EVAL after SCRIPT FLUSH (NOSCRIPT) and keeps counting', async () => {
    const limiter = new RedisRateLimiter(client, 'noscript:', metrics);
    const policy = plan({ limit: 3, period: 'hour' });
    expect((await limiter.consume(keyOnly('key_ns', policy), 1, Date.now())).limit!.remaining).toBe(2);
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    expect((await limiter.consume(keyOnly('key_ns', policy), 1, Date.now())).limit!.remaining).toBe(1);
    // The EVALSHA failed with NOSCRIPT and the same call was answered by one EVAL, which reloads it.
    expect(await commandStats()).toMatchObject({ evalsha: 1, eval: 1 });
    expect(await admin.info('commandstats')).toMatch(/cmdstat_evalsha:calls=1,.*failed_calls=1/);
    expect((await limiter.consume(keyOnly('key_ns', policy), 1, Date.now())).limit!.remaining).toBe(0);
    expect((await limiter.consume(keyOnly('key_ns', policy), 1, Date.now())).allowed).toBe(false);
  });
});

// Replicas as the service runs them: each with its command and subscriber connections (connectRedis),
// so a busy key gets leases and replicas can ask each other for leased places back.
describe('RedisRateLimiter with leases, replicas on a private redis-server', () => {
  let server: RedisServer;
  let admin: Redis;
  const opened: { redis: RedisConnections; limiter: RedisRateLimiter }[] = [];
  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    await Promise.all(
      opened.map(async ({ redis, limiter }) => {
        await limiter.close();
        await redis.close();
      }),
    );
    await admin.quit();
    await server.destroy();
  });

  async function replica(
    clock?: () => number,
  ): Promise<{ redis: RedisConnections; limiter: RedisRateLimiter }> {
    const redis = connectRedis(
      { redisUrl: server.url, redisClusterNodes: undefined },
      createLogger('silent'),
      COUNTING_REDIS,
    );
    expect(await redis.ready(5_000)).toBe(true);
    const limiter = new RedisRateLimiter(redis.client, 'lease:', metrics, {
      subscriber: redis.subscriber,
      clock,
    });
    await limiter.ready();
    const r = { redis, limiter };
    opened.push(r);
    return r;
  }

  const counterOf = (keyId: string, policy: Plan) =>
    `lease:{${keyId}}:${policy.limits[0]!.period}:${windowAt(policy.limits[0]!.period, Date.now()).start}`;

  it('decides most of a busy key’s requests without a call, each with its own place in the count, and gives unused places back', async () => {
    const { limiter } = await replica();
    const policy = plan({ limit: 1_000_000, period: 'hour' });
    await limiter.consume(keyOnly('key_warm', policy), 1, Date.now()); // the first call on a connection sends EVAL
    // A subject's first decision on a replica also sets the plan its counts are decided by (plan-switches.ts).
    for (const key of ['key_cmds', 'key_other']) await limiter.consume(keyOnly(key, policy), 1, Date.now());
    await admin.config('RESETSTAT');
    const decisions = await load(limiter, keyOnly('key_busy', policy), 400, 5);
    const calls = Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1]);
    // Without leases: one call per turn, 400.
    expect(calls).toBeLessThan(40);
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // Places 1 … 2000 of the count, once each: remaining 999,999 down to 998,000.
    const remaining = decisions.map((d) => d.limit!.remaining).sort((a, b) => b - a);
    expect(remaining).toEqual(Array.from({ length: 2000 }, (_, i) => policy.limits[0]!.limit - 1 - i));
    // Leased places nobody used go back once the key goes quiet: the count is what was admitted.
    expect(Number(await admin.get(counterOf('key_busy', policy)))).toBeGreaterThan(2000);
    const settled = await waitFor(
      () => admin.get(counterOf('key_busy', policy)),
      (count) => count === '2000',
      { timeoutMs: 3_000, everyMs: 20 },
    );
    expect(settled.value).toBe('2000');
    expect(await admin.hget(counterOf('key_busy', policy) + ':lease', 'p')).toBe('0');
  });

  it('asks for the next lease while the current one still has places, so requests do not wait for it', async () => {
    const { limiter } = await replica();
    const policy = plan({ limit: 1_000_000, period: 'hour' });
    // About 5 requests a millisecond: leases of ~100 places, each lasting ~20 turns.
    const stats: LoadStats = { turnMs: [], atOnce: 0 };
    const decisions = await load(limiter, keyOnly('key_steady', policy), 300, 5, stats, 1);
    expect(decisions.every((d) => d.allowed)).toBe(true);
    const leased = Number(await admin.get(counterOf('key_steady', policy)));
    expect(leased).toBeLessThan(decisions.length + 1_000); // leases were sized by the rate, not the cap
    // Only the first turns, before the key counts as busy, waited for Redis (and a few late replies).
    expect(decisions.length - stats.atOnce).toBeLessThanOrEqual(35); // ~70 when each lease is asked for once it ran out
  });

  it('times leases by the clock it is given, the one requests bring', async () => {
    let now = Date.now();
    const { limiter } = await replica(() => now);
    const policy = plan({ limit: 1_000_000, period: 'hour' });
    // The clock stands still: to the limiter, three turns of five requests come at once, a busy key.
    for (let turn = 0; turn < 3; turn++)
      await Promise.all(
        Array.from({ length: 5 }, () => limiter.consume(keyOnly('key_clock', policy), 1, now)),
      );
    expect(limiter.consume(keyOnly('key_clock', policy), 1, now)).not.toBeInstanceOf(Promise);
    // A lease's life passes on that clock, not on the wall clock: the next request asks Redis.
    now += WINDOW_LEASES.lifeMs;
    const late = limiter.consume(keyOnly('key_clock', policy), 1, now);
    expect(late).toBeInstanceOf(Promise);
    expect((await late).allowed).toBe(true);
  });

  it('admits exactly the limit across replicas when one of them sits on leased places', async () => {
    const [a, b, c] = await Promise.all([replica(), replica(), replica()]);
    const policy = plan({ limit: 3000, period: 'hour' });
    // Replica a gets busy and ends holding places it has not used.
    const early = await load(a!.limiter, keyOnly('key_idle_holder', policy), 50, 4);
    expect(Number(await admin.get(counterOf('key_idle_holder', policy)))).toBeGreaterThan(early.length);
    // b and c then ask for far more than the rest of the window.
    const started = Date.now();
    const late = (
      await Promise.all([b, c].map((r) => load(r!.limiter, keyOnly('key_idle_holder', policy), 150, 20)))
    ).flat();
    const admittedLate = late.filter((d) => d.allowed).length;
    expect(early.length + admittedLate).toBe(policy.limits[0]!.limit);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await admin.get(counterOf('key_idle_holder', policy))).toBe(String(policy.limits[0]!.limit));
    // Nothing more gets in, from any replica.
    expect((await a!.limiter.consume(keyOnly('key_idle_holder', policy), 1, Date.now())).allowed).toBe(false);
  });

  it('admits exactly the limit when the holder’s lease ended before the window filled', async () => {
    // The holder's clock: its lease's life passes on it without the test waiting for it.
    let ahead = 0;
    const [a, b] = await Promise.all([replica(() => Date.now() + ahead), replica()]);
    const policy = plan({ limit: 3000, period: 'hour' });
    const early = await load(a!.limiter, keyOnly('key_ended_lease', policy), 50, 4);
    // The lease ends unused and the holder has not given it back yet (it does once quiet for a sweep,
    // within a second): only a reclaim brings those places back in time.
    ahead = WINDOW_LEASES.lifeMs;
    const late = await load(b!.limiter, keyOnly('key_ended_lease', policy), 1, 3000);
    expect(early.length + late.filter((d) => d.allowed).length).toBe(policy.limits[0]!.limit);
  });

  it('admits exactly the limit when busy replicas race with leases to the end of the window', async () => {
    const replicas = await Promise.all([replica(), replica(), replica(), replica()]);
    const policy = plan({ limit: 7_919, period: 'hour' });
    const decisions = (
      await Promise.all(replicas.map((r) => load(r.limiter, keyOnly('key_race', policy), 200, 13)))
    ).flat();
    expect(decisions.filter((d) => d.allowed)).toHaveLength(policy.limits[0]!.limit);
    expect(await admin.get(counterOf('key_race', policy))).toBe(String(policy.limits[0]!.limit));
    expect(decisions.filter((d) => !d.allowed).every((d) => d.limit!.remaining === 0)).toBe(true);
  });

  it('waits a second, once, for places leased by a replica that died; those places stay counted', async () => {
    const [dying, survivor] = await Promise.all([replica(), replica()]);
    const policy = plan({ limit: 2000, period: 'hour' });
    const early = await load(dying!.limiter, keyOnly('key_dead_holder', policy), 50, 4);
    // The process ends without settling: it no longer listens for reclaims, and its connections close
    // (after the replies to calls in flight, which may bring it one more lease).
    await dying!.limiter.close();
    await dying!.redis.close();
    opened.splice(opened.indexOf(dying!), 1);
    const held = Number(await admin.get(counterOf('key_dead_holder', policy))) - early.length;
    expect(held).toBeGreaterThan(0);
    const stats: LoadStats = { turnMs: [], atOnce: 0 };
    const late = await load(survivor!.limiter, keyOnly('key_dead_holder', policy), 100, 25, stats);
    expect(late.filter((d) => d.allowed)).toHaveLength(policy.limits[0]!.limit - early.length - held);
    // The turn that found the window full waited a second for the dead replica's places, asking again
    // after 1, 2, 4, … ms and then every 64 ms; no other turn waited that long.
    const slowest = Math.max(...stats.turnMs);
    expect(slowest).toBeGreaterThan(900);
    expect(slowest).toBeLessThan(2_500);
    expect(stats.turnMs.filter((ms) => ms > 900)).toHaveLength(1);
    // Once the window is full, refusals come at once.
    const started = performance.now();
    expect((await survivor!.limiter.consume(keyOnly('key_dead_holder', policy), 1, Date.now())).allowed).toBe(
      false,
    );
    expect(performance.now() - started).toBeLessThan(150);
  });
});
