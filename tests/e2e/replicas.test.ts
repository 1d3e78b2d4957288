/**
 * Several built servers as separate processes behind no balancer (the test spreads the requests),
 * sharing one Redis (a private redis-server this file can pause) and one Postgres database: one count,
 * one view of keys and plans, one usage total — also when replicas and flushers die with SIGKILL.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { windowAt } from '../../src/plans/window.js';
import { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { usageDrained } from './helpers/usage-flushed.js';
import {
  burst,
  failoversSince,
  hit,
  hitFull,
  keyWithPlan,
  outputMark,
  pidOwningLocalPort,
  Replicas,
  sleep,
  totalOn,
  waitFor,
} from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let redis: RedisServer;
let redisClient: Redis;
let database: TestDatabase;
let sql: pg.Client;
let replicas: Replicas;
let prefix: string;
/** The three replicas every test starts from (a test that kills one puts a fresh one in its place). */
let live: Tollgate[];

beforeAll(async () => {
  [backend, redis, database] = await Promise.all([startBackend(), RedisServer.start(), createTestDatabase()]);
  redisClient = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  prefix = testKeyPrefix();
  replicas = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: prefix,
    UPSTREAM_URL: backend.url,
  });
  live = await replicas.start(3);
}, 90_000);

afterAll(async () => {
  redis?.resume();
  await replicas?.stopAll();
  await sql?.end().catch(() => {});
  redisClient?.disconnect();
  await backend?.close();
  await redis?.destroy();
  await database?.drop();
  // Secrets never reach a log line of any replica (checked once every process has exited).
  if (replicas) expectNoSecretsLogged();
}, 60_000);

const forwarded = (path: string) => backend.received.filter((r) => r.url === path).length;
const ms = (n: number) => Math.round(n);

/** Usage totals of keys as stored in Postgres (without what still waits in Redis). */
async function postgresTotals(keyIds: readonly string[]): Promise<Record<string, number>> {
  const { rows } = await sql.query<{ key_id: string; n: string }>(
    'select key_id, sum(requests)::text as n from usage_endpoints where key_id = any($1) group by key_id',
    [keyIds],
  );
  return Object.fromEntries(keyIds.map((id) => [id, Number(rows.find((r) => r.key_id === id)?.n ?? 0)]));
}

/** True once Redis holds no usage on its way to Postgres (no live hash, no sealed batch). */
const redisDrained = () => usageDrained(redisClient, prefix);

/** Replaces killed replicas so the next test starts from three again. */
async function topUp(): Promise<void> {
  live = live.filter((t) => t.process.exitCode === null && t.process.signalCode === null);
  if (live.length < 3) live.push(...(await replicas.start(3 - live.length)));
}

describe('three replicas, one Redis, one Postgres', () => {
  it('lets exactly L of 300 concurrent requests spread over the replicas reach the backend', async () => {
    // Warm processes (compiled hot path, pools open): a cold one, starved of CPU by its neighbours,
    // can stall past Redis' 500 ms command timeout and fail over to in-process limits (see failovers).
    const warm = await keyWithPlan(live[0]!, 'warm-up', 1_000_000);
    await burst(live, warm.secret, 150, '/v1/warm-up');
    const key = await keyWithPlan(live[0]!, 'exact', 25);
    const mark = outputMark(live);
    const statuses = await burst(live, key.secret, 300, '/v1/exact');
    const admitted = statuses.filter((s) => s === 200).length;
    const refused = statuses.filter((s) => s === 429).length;
    expect({
      admitted,
      refused,
      forwarded: forwarded('/v1/exact'),
      failovers: failoversSince(live, mark),
    }).toEqual({
      admitted: 25,
      refused: 275,
      forwarded: 25,
      failovers: [],
    });

    // And again: a second burst is refused everywhere, nothing more is forwarded.
    const again = await burst(live, key.secret, 30, '/v1/exact');
    expect(again.every((s) => s === 429)).toBe(true);
    expect(forwarded('/v1/exact')).toBe(25);
  });

  it('lets exactly L through when one replica sits on places it took ahead of its requests', async () => {
    const limit = 1500;
    const key = await keyWithPlan(live[0]!, 'leased', limit);
    const counter = `${prefix}{${key.id}}:day:${windowAt('day', Date.now()).start}`;
    // One replica busy with the key for a moment: it leases places beyond the requests it served. A
    // lease follows requests that come close together; on a loaded machine that may take more rounds.
    let early = 0;
    let rounds = 0;
    while (rounds < 10 || (rounds < 20 && Number(await redisClient.get(counter)) <= early)) {
      early += (await burst([live[0]!], key.secret, 20, '/v1/leased')).filter((s) => s === 200).length;
      rounds++;
    }
    expect(early).toBe(20 * rounds);
    expect(Number(await redisClient.get(counter))).toBeGreaterThan(early);
    // The other two then ask for more than is left: the first gives its unused places back (asked to
    // by a reclaim, or once the key is quiet on it), and they are admitted elsewhere.
    const mark = outputMark(live);
    let late = 0;
    for (let round = 0; round < 8; round++)
      late += (await burst(live.slice(1), key.secret, 200, '/v1/leased')).filter((s) => s === 200).length;
    expect({
      admitted: early + late,
      forwarded: forwarded('/v1/leased'),
      failovers: failoversSince(live, mark),
    }).toEqual({
      admitted: limit,
      forwarded: limit,
      failovers: [],
    });
    expect(await redisClient.get(counter)).toBe(String(limit));
  });

  it('refuses a deleted key at once on the deleting replica and within 1 s on every other', async () => {
    const lastReplica: number[] = [];
    for (let round = 0; round < 5; round++) {
      const key = await keyWithPlan(live[0]!, `doomed-${round}`);
      const deleter = live[round % live.length]!;
      const others = live.filter((t) => t !== deleter);
      // Warm every replica's cache: without the broadcast each would keep the key for the cache lifetime.
      for (const t of live) expect(await hit(t, key.secret, '/v1/warm')).toBe(200);

      const sent = performance.now();
      const deleted = await deleter.admin('DELETE', `/consumer-api-key/${key.id}`);
      expect(deleted.status).toBe(200);
      expect(await hit(deleter, key.secret, '/v1/after-delete')).toBe(401);
      const refusedAfter = await Promise.all(
        others.map(async (t) => {
          while (performance.now() - sent < 5_000) {
            if ((await hit(t, key.secret, '/v1/after-delete')) === 401) return performance.now() - sent;
            await sleep(2);
          }
          return Infinity;
        }),
      );
      lastReplica.push(Math.max(...refusedAfter));
    }
    console.log(
      `deletion → refused by the last of ${live.length} replicas (DELETE sent → first 401), 5 rounds: ` +
        `${lastReplica.map(ms).join(', ')} ms (max ${ms(Math.max(...lastReplica))} ms)`,
    );
    for (const t of lastReplica) expect(t).toBeLessThanOrEqual(1_000);
  });

  it('applies a new binding within 1 s on every replica', async () => {
    const key = await keyWithPlan(live[0]!, 'rebound');
    for (const t of live) {
      const res = await hitFull(t, key.secret, '/v1/warm');
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBeNull();
    }
    const timings: number[] = [];
    for (const [round, limit] of [1000, 2000].entries()) {
      const planId = `plan-${limit}-${Date.now()}`;
      expect(
        (await live[1]!.admin('POST', '/rate-limit/create', { rateLimitId: planId, limit, period: 'day' }))
          .status,
      ).toBe(201);
      const binder = live[(round + 1) % live.length]!;
      const sent = performance.now();
      expect(
        (
          await binder.admin('POST', '/api-keys/apply-rate-limit', {
            consumerApiKeyId: key.id,
            rateLimitId: planId,
          })
        ).status,
      ).toBe(200);
      const policy = `"day";q=${limit};w=86400`;
      expect((await hitFull(binder, key.secret)).headers.get('ratelimit-policy')).toBe(policy);
      const seen = await Promise.all(
        live.map(async (t) => {
          while (performance.now() - sent < 5_000) {
            if ((await hitFull(t, key.secret, '/v1/after-bind')).headers.get('ratelimit-policy') === policy)
              return performance.now() - sent;
            await sleep(2);
          }
          return Infinity;
        }),
      );
      timings.push(Math.max(...seen));
    }
    console.log(`new binding → in force on the last replica after ${timings.map(ms).join(', ')} ms`);
    for (const t of timings) expect(t).toBeLessThanOrEqual(1_000);
  });

  it('shows usage served by every replica in every replica’s detail within 2 s', async () => {
    const key = await keyWithPlan(live[0]!, 'usage');
    const statuses = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        hit(live[i % 3]!, key.secret, `/v1/usage/${i % 5}`, { 'x-customer-id': `c${i % 2}` }),
      ),
    );
    expect(statuses.every((s) => s === 200)).toBe(true);
    const answered = performance.now();
    const seen = await Promise.all(
      live.map((t) =>
        waitFor(
          () => totalOn(t, key.id),
          (n) => n === 150,
          { timeoutMs: 5_000 },
        ),
      ),
    );
    expect(seen.map((s) => s.value)).toEqual([150, 150, 150]);
    const slowest = performance.now() - answered;
    console.log(
      `usage of 150 requests over 3 replicas visible on every replica's detail after ${ms(slowest)} ms`,
    );
    expect(slowest).toBeLessThanOrEqual(2_000);

    // A read that overlaps the flusher moving a batch from Redis into Postgres can miss that batch for
    // the moment of the move (usage is read downstream first, so it is never counted twice): read again.
    const { value: detail } = await waitFor(
      () => live[2]!.admin('GET', `/consumer-api-key/${key.id}`),
      (d) => d.body.usage.totalRequests === 150,
      { timeoutMs: 2_000 },
    );
    expect(detail.body.usage).toMatchObject({
      totalRequests: 150,
      successfulRequests: 150,
      failedRequests: 0,
    });
    expect(detail.body.usage.endpoints).toHaveLength(5);
    expect(detail.body.usage.usageByCustomer).toEqual([
      { customerId: 'c0', requests: 75, successful: 75, failed: 0 },
      { customerId: 'c1', requests: 75, successful: 75, failed: 0 },
    ]);
  });

  it('loses at most the last second of a SIGKILLed replica’s usage, and none of the others’', async () => {
    // The survivors' requests use one key (their usage must come out exact); each killed replica
    // instance uses its own key, so what its death cost can be told apart.
    const [survivorA, survivorB, first] = live as [Tollgate, Tollgate, Tollgate];
    const stable = await keyWithPlan(survivorA, 'survivors');
    let stableAnswered = 0;
    let stableFailed = 0;
    let running = true;
    const loop = async (t: Tollgate) => {
      while (running) {
        const status = await hit(t, stable.secret, '/v1/load');
        if (status === 200) stableAnswered++;
        else stableFailed++;
      }
    };
    const stableLoops = [loop(survivorA), loop(survivorB), loop(survivorA), loop(survivorB)];

    const rounds: {
      keyId: string;
      answered: number;
      atRisk: number;
      lastSecond: number;
      inFlight: number;
    }[] = [];
    let victim = first;
    for (let round = 0; round < 3; round++) {
      const key = await keyWithPlan(survivorA, `victim-${round}`);
      const answeredAt: number[] = [];
      let inFlight = 0;
      let alive = true;
      const victimLoop = async () => {
        while (alive) {
          const status = await hit(victim, key.secret, '/v1/victim');
          if (status === 200) answeredAt.push(performance.now());
          else if (alive) inFlight++;
        }
      };
      const victimLoops = [victimLoop(), victimLoop(), victimLoop()];
      await sleep(1_200 + Math.random() * 800);
      const killedAt = performance.now();
      const exited = new Promise((r) => victim.process.once('exit', r));
      victim.process.kill('SIGKILL');
      await exited;
      alive = false;
      await Promise.all(victimLoops);
      const answered = answeredAt.filter((t) => t <= killedAt).length;
      // Pushed once a second: anything answered in the last second before the kill may not have been.
      const atRisk = answeredAt.filter((t) => t > killedAt - 1_500 && t <= killedAt).length;
      const lastSecond = answeredAt.filter((t) => t > killedAt - 1_000 && t <= killedAt).length;
      rounds.push({
        keyId: key.id,
        answered,
        atRisk,
        lastSecond,
        inFlight: inFlight + answeredAt.length - answered,
      });
      victim = (await replicas.start(1))[0]!;
      live.push(victim);
    }
    running = false;
    await Promise.all(stableLoops);
    live = live.filter((t) => t.process.signalCode === null);

    // Every survivor's request is counted exactly, seen from any replica, within 2 s.
    const settled = await Promise.all(
      live.map((t) =>
        waitFor(
          () => totalOn(t, stable.id),
          (n) => n === stableAnswered + stableFailed,
        ),
      ),
    );
    expect(settled.map((s) => s.value)).toEqual(live.map(() => stableAnswered + stableFailed));
    expect(stableFailed).toBe(0);

    const report: string[] = [];
    for (const [i, r] of rounds.entries()) {
      const counted = (await totalOn(survivorB, r.keyId))!;
      const lost = r.answered - counted;
      report.push(
        `kill ${i + 1}: answered ${r.answered}, counted ${counted}, lost ${lost} (answered in its last 1 s: ${r.lastSecond}, last 1.5 s: ${r.atRisk})`,
      );
      expect(lost).toBeGreaterThanOrEqual(-r.inFlight);
      expect(lost).toBeLessThanOrEqual(r.atRisk);
    }
    console.log(
      `SIGKILL of a replica under load (survivors: ${stableAnswered} answered, all counted):\n  ${report.join('\n  ')}`,
    );

    // Postgres ends up with exactly what the detail showed once Redis has handed everything over
    // (a killed flusher's lock expires after at most 10 s).
    const drained = await waitFor(redisDrained, (d) => d, { timeoutMs: 20_000, everyMs: 200 });
    expect(drained.value).toBe(true);
    const ids = [stable.id, ...rounds.map((r) => r.keyId)];
    const details = await Promise.all(ids.map((id) => totalOn(survivorA, id)));
    expect(await postgresTotals(ids)).toEqual(Object.fromEntries(ids.map((id, i) => [id, details[i]])));
  }, 90_000);

  describe('a flusher killed mid-flush', () => {
    let locker: pg.Client;

    beforeEach(async () => {
      await topUp();
      // Start from an empty pipeline, so the batch the flusher takes holds this test's usage only.
      expect((await waitFor(redisDrained, (d) => d, { timeoutMs: 20_000, everyMs: 100 })).value).toBe(true);
      locker = new pg.Client({ connectionString: database.url });
      await locker.connect();
    });

    afterEach(async () => {
      redis.resume();
      await locker?.end().catch(() => {});
    });

    /**
     * Holds usage_batches locked against writes (the first table a flush writes; SHARE mode, so the
     * detail can still read which batches were applied), sends `n` requests over the
     * replicas, waits until every replica has pushed them to Redis and one flusher is stuck in its
     * Postgres transaction, and returns that flusher's process.
     */
    async function stallFlusher(keySecret: string, keyId: string, n: number): Promise<Tollgate> {
      await locker.query('begin');
      await locker.query('lock table usage_batches in share mode');
      expect((await burst(live, keySecret, n, '/v1/flush')).every((s) => s === 200)).toBe(true);
      // Each replica's view lacks only what the others have not pushed: n everywhere means all pushed.
      const pushed = await Promise.all(
        live.map((t) =>
          waitFor(
            () => totalOn(t, keyId),
            (v) => v === n,
            { timeoutMs: 4_000 },
          ),
        ),
      );
      expect(pushed.map((p) => p.value)).toEqual(live.map(() => n));
      const stuck = await waitFor(
        async () =>
          (
            await sql.query<{ client_port: number }>(
              "select client_port from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and state = 'active'",
            )
          ).rows,
        (rows) => rows.length > 0,
        { timeoutMs: 3_000, everyMs: 20 },
      );
      expect(stuck.value).toHaveLength(1);
      const pid = pidOwningLocalPort(
        stuck.value[0]!.client_port,
        live.map((t) => t.process.pid!),
      );
      const flusher = live.find((t) => t.process.pid === pid);
      expect(flusher).toBeDefined();
      return flusher!;
    }

    async function kill(t: Tollgate): Promise<void> {
      const exited = new Promise((r) => t.process.once('exit', r));
      t.process.kill('SIGKILL');
      await exited;
      live = live.filter((x) => x !== t);
    }

    /** Every replica's detail view of a key, read every 100 ms for `forMs`. */
    async function watchViews(keyId: string, forMs: number): Promise<number[]> {
      const views: number[] = [];
      const until = performance.now() + forMs;
      while (performance.now() < until) {
        views.push(...(await Promise.all(live.map((t) => totalOn(t, keyId)))).map((v) => v ?? -1));
        await sleep(100);
      }
      return views;
    }

    it('before its transaction commits: the survivors still show every request, and Postgres gets each once', async () => {
      const key = await keyWithPlan(live[0]!, 'mid-flush');
      const flusher = await stallFlusher(key.secret, key.id, 60);
      await kill(flusher);
      await locker.query('rollback');

      // The dead flusher's lock holds the others off for a while (10 s from when it took it): the
      // sealed batch waits in Redis meanwhile, and the detail keeps showing it.
      expect(new Set(await watchViews(key.id, 1_500))).toEqual(new Set([60]));
      const done = await waitFor(
        async () => (await postgresTotals([key.id]))[key.id]!,
        (n) => n === 60,
        { timeoutMs: 20_000, everyMs: 250 },
      );
      console.log(
        `flusher SIGKILLed before commit: Postgres total ${done.value}/60 after ${ms(done.ms)} ms more (the dead flusher's lock expiring)`,
      );
      expect(done.value).toBe(60);
      expect((await waitFor(redisDrained, (d) => d, { timeoutMs: 5_000 })).value).toBe(true);
      expect(await Promise.all(live.map((t) => totalOn(t, key.id)))).toEqual(live.map(() => 60));
    }, 60_000);

    it('after its transaction commits, while Redis does not answer: Postgres still counts each request once', async () => {
      const key = await keyWithPlan(live[0]!, 'post-commit');
      const flusher = await stallFlusher(key.secret, key.id, 40);
      // Redis stops answering, the transaction goes through, the flusher's next step hangs: kill it.
      redis.pause();
      await locker.query('rollback');
      // The batch holds what had been pushed when the flusher sealed it: some or all of the 40.
      const committed = await waitFor(
        async () => (await postgresTotals([key.id]))[key.id]!,
        (n) => n > 0,
        { timeoutMs: 4_000, everyMs: 20 },
      );
      expect(committed.value).toBeGreaterThan(0);
      await kill(flusher);
      redis.resume();

      const done = await waitFor(redisDrained, (d) => d, { timeoutMs: 20_000, everyMs: 250 });
      expect(done.value).toBe(true);
      console.log(
        `flusher SIGKILLed after committing a batch of ${committed.value}/40: Redis drained ${ms(done.ms)} ms after`,
      );
      expect((await postgresTotals([key.id]))[key.id]).toBe(40);
      expect(await Promise.all(live.map((t) => totalOn(t, key.id)))).toEqual(live.map(() => 40));
    }, 60_000);
  });
});
