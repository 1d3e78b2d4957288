import { Redis } from 'ioredis';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { windowAt } from '../../src/limits/window.js';
import { Metrics } from '../../src/ops/metrics.js';
import { createLogger } from '../../src/ops/logger.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { REDIS_URL, testKeyPrefix } from '../helpers/services.js';
import { RedisServer } from '../helpers/redis-server.js';

const prefix = testKeyPrefix();
const metrics = new Metrics();
const newClient = () => new Redis(REDIS_URL, { enableAutoPipelining: true, enableOfflineQueue: false, lazyConnect: true });

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
      Array.from({ length: 1000 }, (_, i) => limiters[i % limiters.length]!.consume('key_exact', { limit, period: 'hour' }, now)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(limit);
    // Every admitted request got its own place in the count: remaining 136, 135, …, 0, once each.
    const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => i));
    // Refusals don't count: the stored count is the limit, not the number of attempts.
    const peek = await limiters[0]!.peek('key_exact', { limit, period: 'hour' }, now);
    expect(peek).toEqual({ allowed: false, limit, remaining: 0, resetMs: windowAt('hour', now).end });
  });

  it('counts down remaining and reports the window end as the reset time', async () => {
    const now = Date.now();
    const policy = { limit: 3, period: 'day' } as const;
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await limiters[i % 2]!.consume('key_countdown', policy, now));
    expect(seen.map((d) => [d.allowed, d.remaining])).toEqual([[true, 2], [true, 1], [true, 0], [false, 0]]);
    expect(seen.every((d) => d.resetMs === windowAt('day', now).end)).toBe(true);
  });

  it('keeps keys and periods apart', async () => {
    const now = Date.now();
    await limiters[0]!.consume('key_a', { limit: 1, period: 'minute' }, now);
    expect((await limiters[1]!.consume('key_a', { limit: 1, period: 'minute' }, now)).allowed).toBe(false);
    expect((await limiters[1]!.consume('key_b', { limit: 1, period: 'minute' }, now)).allowed).toBe(true);
    expect((await limiters[1]!.consume('key_a', { limit: 1, period: 'hour' }, now)).allowed).toBe(true);
  });

  it('peek reads without counting', async () => {
    const now = Date.now();
    const policy = { limit: 2, period: 'week' } as const;
    expect((await limiters[0]!.peek('key_peek', policy, now)).remaining).toBe(2);
    await limiters[0]!.consume('key_peek', policy, now);
    for (let i = 0; i < 5; i++) expect((await limiters[i]!.peek('key_peek', policy, now)).remaining).toBe(1);
    expect((await limiters[0]!.consume('key_peek', policy, now)).allowed).toBe(true);
  });

  it('starts a new count when a real one-second window ends; the old counter expires 5 s after its window', async () => {
    const policy = { limit: 2, period: 'second' } as const;
    const first = Date.now();
    const results = [];
    for (let i = 0; i < 3; i++) results.push((await limiters[i]!.consume('key_second', policy, first)).allowed);
    expect(results).toEqual([true, true, false]);
    await new Promise((r) => setTimeout(r, windowAt('second', first).end - Date.now() + 5));
    expect((await limiters[3]!.consume('key_second', policy, Date.now())).allowed).toBe(true);
    const counter = `${prefix}{key_second}:second:${windowAt('second', first).start}`;
    const ttl = await clients[0]!.pttl(counter);
    expect(ttl).toBeGreaterThan(0);
    expect(Date.now() + ttl).toBeLessThanOrEqual(windowAt('second', first).end + 5_000 + 50);
  });

  it('names counters with the key id as hash tag', async () => {
    const now = Date.now();
    await limiters[0]!.consume('key_tag', { limit: 5, period: 'month' }, now);
    expect(await clients[0]!.exists(`${prefix}{key_tag}:month:${windowAt('month', now).start}`)).toBe(1);
  });

  it('handles limits up to 2^53 - 1', async () => {
    const limit = Number.MAX_SAFE_INTEGER;
    const d = await limiters[0]!.consume('key_huge', { limit, period: 'hour' }, Date.now());
    expect(d).toMatchObject({ allowed: true, remaining: limit - 1 });
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
    redis = connectRedis({ redisUrl: server.url, redisClusterNodes: undefined }, createLogger('silent'));
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
    return Object.fromEntries([...info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
  }

  it('costs one Redis command per decision, and one for all the decisions a key needs in one turn', async () => {
    const limiter = new RedisRateLimiter(client, 'cmd:', metrics);
    const policy = { limit: 1000, period: 'hour' } as const;
    await limiter.consume('key_warm', policy, Date.now()); // the first call on a connection sends EVAL
    await admin.config('RESETSTAT');
    const n = 250;
    for (let i = 0; i < n; i++) await limiter.consume('key_cmds', policy, Date.now());
    expect((await commandStats()).evalsha).toBe(n);
    // Requests that arrive together (one turn of the event loop) share one script call per key.
    await admin.config('RESETSTAT');
    const together = await Promise.all([
      ...Array.from({ length: n }, () => limiter.consume('key_cmds', policy, Date.now())),
      ...Array.from({ length: 10 }, () => limiter.consume('key_other', policy, Date.now())),
    ]);
    expect(together.every((d) => d.allowed)).toBe(true);
    const { evalsha, eval: evals, 'config|resetstat': _reset, ...inside } = await commandStats();
    expect(evalsha).toBe(2);
    expect(evals).toBeUndefined();
    // commandstats also lists what the script ran: GET, INCRBY and PEXPIREAT, within the one EVALSHA.
    expect(Object.keys(inside).sort()).toEqual(['get', 'incrby', 'pexpireat']);
    // Each request still has its own place in the count.
    expect(together.slice(0, n).map((d) => d.remaining)).toEqual(Array.from({ length: n }, (_, i) => 1000 - n - 1 - i));
    expect(await admin.get(`cmd:{key_cmds}:hour:${windowAt('hour', Date.now()).start}`)).toBe(String(2 * n));
  });

  it('writes the calls of one turn for several keys at once', async () => {
    const limiter = new RedisRateLimiter(client, 'write:', metrics);
    const policy = { limit: 1000, period: 'hour' } as const;
    await limiter.consume('key_w0', policy, Date.now());
    const keys = Array.from({ length: 8 }, (_, i) => `key_w${i}`);
    await admin.config('RESETSTAT');
    const decisions = await Promise.all(keys.map((k) => limiter.consume(k, policy, Date.now())));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    const stats = await admin.info('stats');
    // Eight script calls in Redis, read from the socket in one go; the other read is this INFO.
    expect((await commandStats()).evalsha).toBe(8);
    expect(Number(/total_reads_processed:(\d+)/.exec(stats)?.[1])).toBe(2);
  });

  it('admits a batch in arrival order up to what the window holds, and counts only those', async () => {
    const limiter = new RedisRateLimiter(client, 'batch:', metrics);
    const policy = { limit: 10, period: 'hour' } as const;
    for (let i = 0; i < 4; i++) await limiter.consume('key_b', policy, Date.now());
    const burst = await Promise.all(Array.from({ length: 9 }, () => limiter.consume('key_b', policy, Date.now())));
    expect(burst.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 5], [true, 4], [true, 3], [true, 2], [true, 1], [true, 0], [false, 0], [false, 0], [false, 0],
    ]);
    expect(await admin.get(`batch:{key_b}:hour:${windowAt('hour', Date.now()).start}`)).toBe('10');
    // A full window refuses a whole batch without counting it.
    const refused = await Promise.all(Array.from({ length: 3 }, () => limiter.consume('key_b', policy, Date.now())));
    expect(refused.every((d) => !d.allowed && d.remaining === 0)).toBe(true);
    expect(await admin.get(`batch:{key_b}:hour:${windowAt('hour', Date.now()).start}`)).toBe('10');
  });

  it('falls back to EVAL after SCRIPT FLUSH (NOSCRIPT) and keeps counting', async () => {
    const limiter = new RedisRateLimiter(client, 'noscript:', metrics);
    const policy = { limit: 3, period: 'hour' } as const;
    expect((await limiter.consume('key_ns', policy, Date.now())).remaining).toBe(2);
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    expect((await limiter.consume('key_ns', policy, Date.now())).remaining).toBe(1);
    // The EVALSHA failed with NOSCRIPT and the same call was answered by one EVAL, which reloads it.
    expect(await commandStats()).toMatchObject({ evalsha: 1, eval: 1 });
    expect(await admin.info('commandstats')).toMatch(/cmdstat_evalsha:calls=1,.*failed_calls=1/);
    expect((await limiter.consume('key_ns', policy, Date.now())).remaining).toBe(0);
    expect((await limiter.consume('key_ns', policy, Date.now())).allowed).toBe(false);
  });
});
