import { stat } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { FailoverRateLimiter, LimiterUnavailableError } from '../../src/limits/failover-limiter.js';
import type { Subject } from '../../src/plans/subject.js';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { windowAt } from '../../src/plans/window.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { RedisPendingUsage } from '../../src/usage/redis/pending.js';
import { RedisUsageSink } from '../../src/usage/redis/sink.js';
import { emptyKeyUsage } from '../../src/usage/usage.js';
import { RedisServer } from '../helpers/redis-server.js';
import { pendingTotal } from '../helpers/pending.js';
import { keyOnly, plan } from '../helpers/plans.js';

interface LogLine {
  level: number;
  msg: string;
}

/**
 * The command timeout of a replica whose Redis only stops: a stopped server fails its commands at once
 * (no offline queue), so the timeout only guards the healthy phases before and after, where a machine
 * busy with other test files has held a reply past the default.
 */
const STURDY_TIMEOUT_MS = 5_000;
/** The default (`connectRedis`), which the tests of a Redis that hangs or holds writes time. */
const DEFAULT_TIMEOUT_MS = 500;

/** A replica's limiter over its own connections to a private redis-server, with its logs and metrics. */
async function replica(server: RedisServer, mode: 'open' | 'closed', commandTimeoutMs = STURDY_TIMEOUT_MS) {
  const lines: LogLine[] = [];
  const logger = createLogger('info', {
    write: (line: string) => void lines.push(JSON.parse(line) as LogLine),
  });
  const metrics = new Metrics();
  const redis = connectRedis({ redisUrl: server.url, redisClusterNodes: undefined }, logger, {
    commandTimeoutMs,
  });
  expect(await redis.ready(5_000)).toBe(true);
  const limiter = new FailoverRateLimiter(
    new RedisRateLimiter(redis.client, 'fo:', metrics),
    logger,
    metrics,
    { mode, probeIntervalMs: 100 },
  );
  const degraded = async () =>
    (await metrics.degraded.get()).values.find((v) => v.labels.dependency === 'redis')?.value;
  const logged = (level: number) => lines.filter((l) => l.level === level).map((l) => l.msg);
  return { redis, limiter, metrics, degraded, logged };
}

const WARN = 40;
const INFO = 30;
const policy = plan({ limit: 5, period: 'hour' });

async function until(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs `fn`, returning its outcome and how long it took. */
async function timed<T>(fn: () => T | Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = performance.now();
  try {
    const value = await fn();
    return { ms: performance.now() - start, value };
  } catch (error) {
    return { ms: performance.now() - start, error };
  }
}

describe('FailoverRateLimiter against a redis-server that stops and comes back', () => {
  let server: RedisServer;
  let current: RedisConnections | undefined;
  beforeEach(async () => {
    server = await RedisServer.start();
  });
  afterEach(async () => {
    server.resume();
    await current?.close();
    await server.destroy();
  });

  it('open: limits in process during the outage, says so once, and returns to Redis by itself', async () => {
    const r = await replica(server, 'open');
    current = r.redis;
    const now = Date.now();
    for (let i = 0; i < 3; i++)
      expect((await r.limiter.consume(keyOnly('key_o', policy), 1, now)).allowed).toBe(true);
    expect(await r.degraded()).toBe(0);

    await server.stop();
    // Every request is answered, fast; the in-process count starts afresh on this replica.
    const during = [];
    for (let i = 0; i < 7; i++)
      during.push(await timed(() => r.limiter.consume(keyOnly('key_o', policy), 1, now)));
    expect(during.every((d) => d.error === undefined && d.ms < 600)).toBe(true);
    expect(during.map((d) => d.value!.allowed)).toEqual([true, true, true, true, true, false, false]);
    expect(await r.degraded()).toBe(1);
    expect(r.logged(WARN)).toEqual([
      'Redis unavailable: limiting in process on each replica until it answers again',
    ]);

    await server.restart(); // empty: no persistence
    await until(async () => (await r.degraded()) === 0);
    expect(r.logged(INFO)).toContain('Redis answers again: limiting through Redis');
    // The replica puts back the 3 it had admitted through Redis in this window before the restart.
    const counter = `fo:{key_o}:hour:${windowAt('hour', now).start}`;
    await until(async () => (await r.redis.client.get(counter)) === '3');
    expect((await r.limiter.consume(keyOnly('key_o', policy), 1, now)).limit!.remaining).toBe(1);
    expect(await r.redis.client.get(counter)).toBe('4');
    expect(r.logged(WARN)).toHaveLength(1);
    await r.limiter.close();
  });

  it('open: settles a request where it was counted, in Redis or, admitted during the outage, in process', async () => {
    const r = await replica(server, 'open');
    current = r.redis;
    const subjects = keyOnly('key_settle', plan({ limit: 10, period: 'hour' }));
    const now = Date.now();
    const settle = async (reserved: number, units: number) => {
      const decision = await r.limiter.consume(subjects, reserved, now);
      expect(decision.allowed).toBe(true);
      const reservation = { decision, subjects, reserved, admittedMs: now };
      await r.limiter.settle(reservation, units, now);
      return reservation;
    };
    const throughRedis = await settle(4, 1);
    expect(await r.redis.client.get(`fo:{key_settle}:hour:${windowAt('hour', now).start}`)).toBe('1');

    await server.stop();
    // The in-process count starts afresh: 8 reserved, 2 settled, so 8 more fit.
    await settle(8, 2);
    expect((await r.limiter.consume(subjects, 8, now)).limit!.remaining).toBe(0);
    // One Redis admitted cannot be settled while it is out: it keeps its reservation, its settlement
    // sent again until Redis takes it or the limiter closes, and never refused.
    const settling = r.limiter.settle(throughRedis, 3, now);
    expect((await r.limiter.consume(subjects, 1, now)).allowed).toBe(false);
    await r.limiter.close();
    await expect(settling).resolves.toBeUndefined();
  });

  it('closed: refuses with LimiterUnavailableError during the outage, recovers by itself', async () => {
    const r = await replica(server, 'closed');
    current = r.redis;
    expect((await r.limiter.consume(keyOnly('key_c', policy), 1, Date.now())).allowed).toBe(true);
    await server.stop();
    for (let i = 0; i < 3; i++) {
      const outcome = await timed(() => r.limiter.consume(keyOnly('key_c', policy), 1, Date.now()));
      expect(outcome.error).toBeInstanceOf(LimiterUnavailableError);
      expect(outcome.ms).toBeLessThan(600);
    }
    await expect(r.limiter.peek(keyOnly('key_c', policy), Date.now())).rejects.toBeInstanceOf(
      LimiterUnavailableError,
    );
    expect(await r.degraded()).toBe(1);
    await server.restart();
    await until(async () => (await r.degraded()) === 0);
    expect((await r.limiter.consume(keyOnly('key_c', policy), 1, Date.now())).allowed).toBe(true);
    await r.limiter.close();
  });

  it('a Redis that hangs costs one command timeout, then requests stop waiting on it', async () => {
    const r = await replica(server, 'open', DEFAULT_TIMEOUT_MS);
    current = r.redis;
    expect((await r.limiter.consume(keyOnly('key_h', policy), 1, Date.now())).allowed).toBe(true);
    server.pause();
    const slow = await timed(() => r.limiter.consume(keyOnly('key_h', policy), 1, Date.now()));
    expect(slow.value?.allowed).toBe(true);
    expect(slow.ms).toBeGreaterThanOrEqual(450);
    expect(slow.ms).toBeLessThan(1_000);
    expect(await r.degraded()).toBe(1);
    const next = await timed(() => r.limiter.consume(keyOnly('key_h', policy), 1, Date.now()));
    // Decided in process: well short of another command timeout, however busy the machine.
    expect(next.ms).toBeLessThan(DEFAULT_TIMEOUT_MS / 2);
    expect(
      (await r.metrics.redisErrors.get()).values.find((v) => v.labels.operation === 'consume')?.value,
    ).toBe(1);
    server.resume();
    await until(async () => (await r.degraded()) === 0);
    // The decision that timed out was already on the wire, so Redis ran it on resuming; the one after
    // it never reached Redis.
    expect((await r.limiter.peek(keyOnly('key_h', policy), Date.now()))[0]!.remaining).toBe(3);
    await r.limiter.close();
  });

  it('a replica whose own thread stalls past the command timeout, Redis answering in time, keeps limiting through Redis', async () => {
    const r = await replica(server, 'open', DEFAULT_TIMEOUT_MS);
    current = r.redis;
    const pauser = new Redis(server.url);
    const now = Date.now();
    expect((await r.limiter.consume(keyOnly('key_s', policy), 1, now)).allowed).toBe(true);
    /**
     * `send()` on the wire while Redis holds its answer 100 ms, then the thread busy for twice the
     * timeout (a long task, a CPU quota throttling the container): the answer waits on the socket.
     */
    const stalledWhile = async <T>(send: () => T | Promise<T>): Promise<T> => {
      await pauser.call('CLIENT', 'PAUSE', '100', 'ALL');
      const sent = send();
      await new Promise((resolve) => setTimeout(resolve, 20));
      // As a request's work does, the stall runs where the loop reads I/O, not in its timers.
      await stat('.');
      const stalled = performance.now();
      while (performance.now() - stalled < 2 * DEFAULT_TIMEOUT_MS);
      return sent;
    };
    expect((await stalledWhile(() => r.limiter.consume(keyOnly('key_s', policy), 1, now))).limit).toEqual(
      expect.objectContaining({ remaining: 3 }),
    );
    expect(await r.degraded()).toBe(0);
    expect(r.logged(WARN)).toEqual([]);
    // The same of any command (a write of usage, a settlement).
    expect(await stalledWhile(() => r.redis.client.incr('fo:stalled'))).toBe(1);
    pauser.disconnect();
    await r.limiter.close();
  });

  it('a Redis that hangs while the replica’s thread lags throughout is still found out, within twice the timeout', async () => {
    const LAG_MS = 200;
    const r = await replica(server, 'open', DEFAULT_TIMEOUT_MS);
    current = r.redis;
    expect(await r.redis.client.incr('fo:lagging')).toBe(1);
    server.pause();
    // The thread busy 200 ms at a time, one block right after another: a deadline's timer fires late
    // by up to a block, nearly always by more than a thread held up is given back for.
    let lagging = true;
    // What else held the thread up: the machine running other processes between the blocks, or
    // within one past its 200 ms.
    let heldUpMs = 0;
    let blockEnded: number | undefined;
    const lag = () => {
      const busy = performance.now();
      if (blockEnded !== undefined) heldUpMs += busy - blockEnded;
      while (performance.now() - busy < LAG_MS);
      blockEnded = performance.now();
      heldUpMs += blockEnded - busy - LAG_MS;
      if (lagging) setImmediate(lag);
    };
    setImmediate(lag);
    const hung = await timed(() => r.redis.client.incr('fo:lagging'));
    lagging = false;
    server.resume();
    expect((hung.error as Error).message).toBe('Command timed out');
    expect(hung.ms).toBeGreaterThanOrEqual(DEFAULT_TIMEOUT_MS - 50);
    // Given time back once for the thread's lag, never again: a lagging thread does not hide a hang.
    // A timer's lateness is the blocks' and whatever else held the thread up, given back once.
    expect(hung.ms).toBeLessThan(2 * DEFAULT_TIMEOUT_MS + 3 * LAG_MS + 2 * heldUpMs);
    await r.limiter.close();
  });

  it('when the first call times out, calls already waiting on Redis take the fallback with it', async () => {
    const r = await replica(server, 'closed', DEFAULT_TIMEOUT_MS);
    current = r.redis;
    expect((await r.limiter.consume(keyOnly('key_w1', policy), 1, Date.now())).allowed).toBe(true);
    server.pause();
    const first = timed(() => r.limiter.consume(keyOnly('key_w1', policy), 1, Date.now()));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Another key, its own script call: without the breaker it would wait out its own timeout.
    const second = await timed(() => r.limiter.consume(keyOnly('key_w2', policy), 1, Date.now()));
    expect((await first).error).toBeInstanceOf(LimiterUnavailableError);
    expect(second.error).toBeInstanceOf(LimiterUnavailableError);
    expect(second.ms).toBeLessThan(400);
    server.resume();
    await until(async () => (await r.degraded()) === 0);
    await r.limiter.close();
  });

  it('answers most of the first second of a hang: throughput falls for one command timeout only', async () => {
    const r = await replica(server, 'open', DEFAULT_TIMEOUT_MS);
    current = r.redis;
    await r.limiter.consume(keyOnly('key_t0', policy), 1, Date.now());
    server.pause();
    const started = performance.now();
    let decided = 0;
    const firstAnswers: number[] = [];
    // Twenty clients joining over the first 400 ms, keys of their own, one request after another.
    await Promise.all(
      Array.from({ length: 20 }, async (_, client) => {
        await new Promise((resolve) => setTimeout(resolve, client * 20));
        for (let i = 0; performance.now() - started < 1_000; i++) {
          await r.limiter.consume(
            keyOnly(`key_t${client}_${i}`, plan({ limit: 1_000, period: 'hour' })),
            1,
            Date.now(),
          );
          if (i === 0) firstAnswers.push(performance.now() - started);
          decided++;
        }
      }),
    );
    // Every client's first request is answered when the first timeout opens the circuit (~500 ms),
    // not after a timeout of its own (up to ~900 ms for the last to join).
    expect(Math.max(...firstAnswers)).toBeLessThan(750);
    console.log(
      `first second of a Redis hang: ${decided} decisions by 20 clients (one 500 ms command timeout, then in process)`,
    );
    // Waiting out a timeout per request, 20 clients would get 40 decisions in that second.
    expect(decided).toBeGreaterThan(400);
    server.resume();
    await until(async () => (await r.degraded()) === 0);
    await r.limiter.close();
  });
});

describe('a Redis that restarts empty (no persistence)', () => {
  let server: RedisServer;
  const replicas: Awaited<ReturnType<typeof replica>>[] = [];
  beforeAll(async () => {
    server = await RedisServer.start();
    // The default timeout: the last test holds writes past it while the replicas check on reconnecting.
    replicas.push(
      await replica(server, 'closed', DEFAULT_TIMEOUT_MS),
      await replica(server, 'closed', DEFAULT_TIMEOUT_MS),
    );
  });
  afterAll(async () => {
    for (const r of replicas) {
      await r.limiter.close();
      await r.redis.close();
    }
    await server.destroy();
  });

  it('keeps the counts of the current windows: each replica puts back what it admitted', async () => {
    const limit = plan({ limit: 100, period: 'hour' });
    const decide = (r: (typeof replicas)[number]) =>
      Promise.resolve(r.limiter.consume(keyOnly('key_restart', limit), 1, Date.now())).then(
        (d) => d.allowed,
        () => false,
      );
    let admitted = 0;
    for (let i = 0; i < 30; i++) for (const r of replicas) if (await decide(r)) admitted++;
    expect(admitted).toBe(60);
    const counter = `fo:{key_restart}:hour:${windowAt('hour', Date.now()).start}`;
    expect(await replicas[0]!.redis.client.get(counter)).toBe('60');

    await server.stop();
    await server.restart();
    for (const r of replicas) await until(async () => (await r.degraded()) === 0, 10_000);
    // Within a second both have noticed and put back their 30.
    await until(async () => (await replicas[0]!.redis.client.get(counter).catch(() => null)) === '60', 3_000);
    for (let i = 0; i < 60; i++) for (const r of replicas) if (await decide(r)) admitted++;
    console.log(
      `Redis restarted empty mid-window: ${admitted} admitted in the window against a limit of 100`,
    );
    expect(admitted).toBe(100);
  });

  it('keeps a consumer’s count too: each replica puts back what it admitted through any of the consumer’s keys', async () => {
    const consumer: Subject = {
      scope: 'consumer',
      id: 'con_restart',
      plan: plan({ limit: 100, period: 'hour' }),
    };
    // Keys with plans of their own (far from full) and without: the consumer's count follows either.
    const keyOf = (k: number): Subject[] => [
      {
        scope: 'key',
        id: `key_restart_${k}`,
        plan: k === 0 ? plan() : plan({ limit: 1_000, period: 'hour' }),
      },
      consumer,
    ];
    const decide = (r: (typeof replicas)[number], k: number, cost: number) =>
      Promise.resolve(r.limiter.consume(keyOf(k), cost, Date.now())).then(
        (d) => (d.allowed ? cost : 0),
        () => 0,
      );
    let admitted = 0;
    // Three keys, costs 1 and 5, both replicas: 5 × (1 + 5) × 2 = 60 units.
    for (let i = 0; i < 5; i++)
      for (const [n, r] of replicas.entries())
        admitted += (await decide(r, i % 3, 1)) + (await decide(r, (i + n) % 3, 5));
    expect(admitted).toBe(60);
    const counter = `fo:{con_restart}:consumer:hour:${windowAt('hour', Date.now()).start}`;
    expect(await replicas[0]!.redis.client.get(counter)).toBe('60');

    await server.stop();
    await server.restart();
    for (const r of replicas) await until(async () => (await r.degraded()) === 0, 10_000);
    await until(async () => (await replicas[0]!.redis.client.get(counter).catch(() => null)) === '60', 3_000);
    for (let i = 0; i < 60; i++)
      for (const [n, r] of replicas.entries()) admitted += await decide(r, (i + n) % 3, 1);
    expect(admitted).toBe(100);
  });

  it('puts back what it admitted even when Redis stops answering while it checks: it finishes once Redis answers', async () => {
    const limit = plan({ limit: 100, period: 'hour' });
    for (let i = 0; i < 10; i++)
      expect(
        (await replicas[0]!.limiter.consume(keyOnly('key_restart_held', limit), 1, Date.now())).allowed,
      ).toBe(true);
    const counter = `fo:{key_restart_held}:hour:${windowAt('hour', Date.now()).start}`;
    const taken = await replicas[0]!.redis.client.get(counter);
    expect(Number(taken)).toBeGreaterThanOrEqual(10);

    // What a restart does to Redis (its data gone, every connection dropped), in an order that holds
    // writes before the replicas can reconnect: the check on reconnecting reads the marker but cannot
    // set it or put anything back.
    const admin = new Redis(server.url);
    try {
      await admin.flushall();
      await admin.call('CLIENT', 'PAUSE', '5000', 'WRITE');
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await until(async () => replicas.every((r) => r.redis.client.status === 'ready'), 5_000);
      await new Promise((r) => setTimeout(r, 700)); // past the 500 ms command timeout
      expect(await admin.get(counter)).toBeNull();
      // Once writes go through again, the next sweep (every second) finishes the check.
      await until(async () => (await admin.get(counter)) === taken, 10_000);
    } finally {
      admin.disconnect();
    }
  });
});

describe('closing the connections while Redis is down', () => {
  it('stops both connections reconnecting (which would keep the process alive)', async () => {
    const server = await RedisServer.start();
    const redis = connectRedis(
      { redisUrl: server.url, redisClusterNodes: undefined },
      createLogger('silent'),
    );
    const admin = new Redis(server.url, { lazyConnect: true });
    try {
      expect(await redis.ready(5_000)).toBe(true);
      await server.stop();
      await until(async () => redis.client.status === 'reconnecting');
      await redis.close();
      // Redis comes back: past the longest reconnect delay (about a second), nobody but us has connected.
      await server.restart();
      await new Promise((r) => setTimeout(r, 2_500));
      await admin.connect();
      const clients = String(await admin.call('CLIENT', 'LIST'))
        .trim()
        .split('\n');
      expect(clients).toHaveLength(1);
    } finally {
      admin.disconnect();
      await server.destroy();
    }
  });
});

describe('RedisUsageSink when Redis hangs mid-push', () => {
  let server: RedisServer;
  let redis: RedisConnections;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = connectRedis({ redisUrl: server.url, redisClusterNodes: undefined }, createLogger('silent'), {
      commandTimeoutMs: 300,
    });
    expect(await redis.ready(5_000)).toBe(true);
  });
  afterAll(async () => {
    server.resume();
    await redis.close();
    await server.destroy();
  });

  const batch = (requests: number) => {
    const u = emptyKeyUsage();
    u.endpoints.set('/p', { requests, successful: requests, failed: 0, totalDurationMs: requests, cost: 0 });
    return new Map([['key_p', u]]);
  };
  const counted = async (prefix: string) =>
    (
      await pendingTotal(
        new RedisPendingUsage(redis.client, prefix, createLogger('silent'), new Metrics()),
        'key_p',
      )
    )?.endpoints.get('/p')?.requests;

  it('keeps a push that timed out and sends it again as the same push: counted once', async () => {
    const prefix = 'hang1:';
    const sink = new RedisUsageSink(redis.client, prefix);
    server.pause();
    // Sent, unanswered: the command times out while Redis holds it unread.
    await expect(sink.write(batch(3))).rejects.toThrow(/timed out/);
    expect(sink.heldRequests()).toBe(3);
    await expect(sink.write(batch(4))).rejects.toThrow(/timed out/);
    expect(sink.heldRequests()).toBe(7);
    // Resumed, Redis runs every send it received; the next write sends the held pushes once more.
    server.resume();
    await until(async () => {
      await sink.write(new Map()).catch(() => {});
      return sink.heldRequests() === 0;
    });
    expect(await counted(prefix)).toBe(7);
  });

  it('counts exactly once however long Redis hangs, whatever ran late', async () => {
    const prefix = 'hang2:';
    const sink = new RedisUsageSink(redis.client, prefix);
    server.pause();
    let handed = 0;
    // A second of pushes, each refused with a timeout, each kept and re-sent with the next.
    for (let i = 0; i < 5; i++) {
      await sink.write(batch(1)).catch(() => {});
      handed++;
    }
    await new Promise((r) => setTimeout(r, 1_500));
    server.resume();
    await until(async () => {
      await sink.write(new Map()).catch(() => {});
      return sink.heldRequests() === 0;
    });
    expect(await counted(prefix)).toBe(handed);
  });

  it('rejects at once a push that could not be sent', async () => {
    await server.stop();
    await until(async () => redis.client.status !== 'ready');
    const outcome = await timed(() => new RedisUsageSink(redis.client, 'down:').write(batch(1)));
    expect(outcome.error).toBeInstanceOf(Error);
    expect(outcome.ms).toBeLessThan(100);
    // The key detail leaves out what Redis holds instead of failing.
    expect(
      await pendingTotal(
        new RedisPendingUsage(redis.client, 'down:', createLogger('silent'), new Metrics()),
        'key_p',
      ),
    ).toBeUndefined();
    await server.restart();
  });
});
