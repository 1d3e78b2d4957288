/**
 * Dependencies failing under built servers: a private redis-server killed, hung and restarted
 * (REDIS_FAILURE_MODE open and closed), and a private Postgres cluster (initdb) stopped and started.
 * Every request gets an answer in bounded time, and usage recorded meanwhile is not lost.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { RedisServer } from '../helpers/redis-server.js';
import { REDIS_URL, createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { PostgresServer } from './helpers/postgres-server.js';
import {
  burst,
  failoversSince,
  fetchWithin,
  hitFull,
  keyWithPlan,
  logged,
  metric,
  outputMark,
  Replicas,
  sleep,
  totalOn,
  waitFor,
} from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

const DEGRADED = 'tollgate_degraded{dependency="redis"}';
/**
 * "No request hangs": a Redis command gives up after 500 ms and a Postgres connection attempt after
 * 2 s; the bounds leave room for a CI machine short of CPU, far below any client's timeout.
 */
const REDIS_BOUND_MS = 3_000;

let backend: Backend;
const deployments: Replicas[] = [];

beforeAll(async () => {
  backend = await startBackend();
});

afterAll(async () => {
  await Promise.all(deployments.map((d) => d.stopAll()));
  await backend?.close();
  if (deployments.length > 0) expectNoSecretsLogged();
}, 60_000);

const forwarded = (path: string) => backend.received.filter((r) => r.url === path).length;

/** Sequential requests; resolves statuses, error codes and the slowest answer. */
async function series(t: Tollgate, secret: string, n: number, path: string) {
  const results = [];
  for (let i = 0; i < n; i++) results.push(await hitFull(t, secret, path));
  return {
    statuses: results.map((r) => r.status),
    codes: results.map((r) => (r.body as { code?: string }).code),
    slowestMs: Math.max(...results.map((r) => r.ms)),
  };
}

describe('Redis outage (private redis-server)', () => {
  let redis: RedisServer;
  let database: TestDatabase;
  let open: Tollgate;
  let closed: Tollgate;

  beforeAll(async () => {
    [redis, database] = await Promise.all([RedisServer.start(), createTestDatabase()]);
    const deployment = new Replicas({
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: testKeyPrefix(),
      UPSTREAM_URL: backend.url,
    });
    deployments.push(deployment);
    const [openOnes, closedOnes] = await Promise.all([
      deployment.start(1, { REDIS_FAILURE_MODE: 'open' }),
      deployment.start(1, { REDIS_FAILURE_MODE: 'closed' }),
    ]);
    open = openOnes[0]!;
    closed = closedOnes[0]!;
  }, 60_000);

  afterAll(async () => {
    redis?.resume();
    await Promise.all(deployments.map((d) => d.stopAll()));
    await redis?.destroy();
    await database?.drop();
  }, 60_000);

  it('open keeps answering and limits in process, closed answers 503 limit_unavailable; both recover on their own', async () => {
    const key = await keyWithPlan(open, 'through-outage', 20);
    expect((await series(open, key.secret, 5, '/v1/open')).statuses).toEqual([200, 200, 200, 200, 200]);
    // Let the flusher move those five into Postgres: a restarted redis-server comes back empty.
    await sleep(2_500);
    expect(await metric(open, DEGRADED)).toBe(0);

    await redis.stop();
    const during = await series(open, key.secret, 25, '/v1/open');
    // Each replica now counts on its own, from zero: the full limit again, then 429.
    expect(during.statuses).toEqual([...Array(20).fill(200), ...Array(5).fill(429)]);
    expect(during.slowestMs).toBeLessThan(REDIS_BOUND_MS);
    await logged(open, 'Redis unavailable: limiting in process');
    expect(await metric(open, DEGRADED)).toBe(1);

    const refused = await series(closed, key.secret, 5, '/v1/closed');
    expect(refused.statuses).toEqual([503, 503, 503, 503, 503]);
    expect(refused.codes).toEqual(Array(5).fill('limit_unavailable'));
    expect(refused.slowestMs).toBeLessThan(REDIS_BOUND_MS);
    expect(forwarded('/v1/closed')).toBe(0);
    await logged(closed, 'Redis unavailable: refusing proxied requests');
    expect(await metric(closed, DEGRADED)).toBe(1);
    for (const t of [open, closed])
      expect(await fetchWithin(t.opsUrl + '/readyz', {}, async (r) => r.status)).toBe(503);

    await redis.restart();
    const recovered = await Promise.all(
      [open, closed].map((t) =>
        waitFor(
          () => metric(t, DEGRADED),
          (v) => v === 0,
          { timeoutMs: 10_000, everyMs: 100 },
        ),
      ),
    );
    expect(recovered.map((r) => r.value)).toEqual([0, 0]);
    console.log(
      `Redis back: both replicas counting through Redis again after ${Math.round(Math.max(...recovered.map((r) => r.ms)))} ms`,
    );
    for (const t of [open, closed]) expect((await fetch(t.opsUrl + '/readyz')).status).toBe(200);

    // One count again: 30 concurrent requests over both replicas, limit 10, exactly 10 forwarded.
    const shared = await keyWithPlan(open, 'after-outage', 10);
    const mark = outputMark([open, closed]);
    const statuses = await burst([open, closed], shared.secret, 30, '/v1/shared');
    expect({
      admitted: statuses.filter((s) => s === 200).length,
      refused: statuses.filter((s) => s === 429).length,
      forwarded: forwarded('/v1/shared'),
      failovers: failoversSince([open, closed], mark),
    }).toEqual({ admitted: 10, refused: 20, forwarded: 10, failovers: [] });

    // Usage recorded while Redis was down waited in memory and arrived: 5 before, 25 answered by the
    // open replica during the outage, 5 refused by the closed one (a valid key's request counts).
    const usage = await Promise.all(
      [open, closed].map((t) =>
        waitFor(
          () => totalOn(t, key.id),
          (n) => n === 35,
          { timeoutMs: 5_000 },
        ),
      ),
    );
    expect(usage.map((u) => u.value)).toEqual([35, 35]);
  }, 60_000);

  it('a hung Redis (SIGSTOP) costs each request at most a command timeout, and no usage is lost or doubled', async () => {
    const key = await keyWithPlan(open, 'hung', 100_000);
    let answered = 0;
    let slowest = 0;
    let running = true;
    const loop = async () => {
      while (running) {
        const res = await hitFull(open, key.secret, '/v1/hung');
        slowest = Math.max(slowest, res.ms);
        if (res.status === 200) answered++;
        await sleep(5);
      }
    };
    const loops = [loop(), loop()];
    await sleep(1_200);
    redis.pause();
    await sleep(2_500);
    redis.resume();
    await sleep(1_200);
    running = false;
    await Promise.all(loops);

    expect(slowest).toBeLessThan(REDIS_BOUND_MS);
    const counted = await waitFor(
      () => totalOn(open, key.id),
      (n) => n === answered,
      { timeoutMs: 5_000 },
    );
    console.log(
      `Redis hung 2.5 s under load: ${answered} answered (slowest ${Math.round(slowest)} ms), ${counted.value} counted`,
    );
    expect(counted.value).toBe(answered);
  }, 30_000);

  it('a replica paused under load (SIGSTOP, as a CPU quota pauses a container) never takes a Redis that answered for a failing one', async () => {
    // Under the 1,024 units a count must hold to lease: every admitted request asks Redis, and the
    // clients send without a pause (not `load()`'s paced ones), so commands are on the wire whenever
    // the replica is paused.
    const key = await keyWithPlan(open, 'paused', 1_000, 'second');
    const mark = outputMark([open]);
    let running = true;
    let answered = 0;
    const loop = async () => {
      while (running) if ((await hitFull(open, key.secret, '/v1/paused')).status === 200) answered++;
    };
    const loops = Array.from({ length: 4 }, loop);
    await sleep(300);
    // Each pause longer than the 500 ms command timeout: Redis answers meanwhile, the replica reads
    // the answers only once it runs again.
    for (let pause = 0; pause < 12; pause++) {
      open.process.kill('SIGSTOP');
      await sleep(800);
      open.process.kill('SIGCONT');
      await sleep(300);
    }
    running = false;
    await Promise.all(loops);
    console.log(`12 pauses of 800 ms under load: ${answered} answered`);
    expect({ failovers: failoversSince([open], mark), degraded: await metric(open, DEGRADED) }).toEqual({
      failovers: [],
      degraded: 0,
    });
    expect(answered).toBeGreaterThan(0);
  }, 60_000);
});

describe('Postgres outage (private cluster from initdb)', () => {
  let postgres: PostgresServer;
  let a: Tollgate;
  let b: Tollgate;

  beforeAll(async () => {
    postgres = await PostgresServer.start();
    const url = await postgres.createDatabase('tollgate');
    const deployment = new Replicas({
      DATABASE_URL: url,
      REDIS_URL,
      REDIS_KEY_PREFIX: testKeyPrefix(),
      UPSTREAM_URL: backend.url,
    });
    deployments.push(deployment);
    [a, b] = (await deployment.start(2)) as [Tollgate, Tollgate];
  }, 60_000);

  afterAll(async () => {
    await Promise.all(deployments.map((d) => d.stopAll()));
    await postgres?.destroy();
  }, 60_000);

  /** A key's request total in Postgres itself, without what waits in Redis. */
  async function storedRequests(keyId: string): Promise<number> {
    const client = new pg.Client({ connectionString: postgres.url('tollgate') });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string | null }>(
        'select sum(requests)::text as n from usage_endpoints where key_id = $1',
        [keyId],
      );
      return Number(rows[0]?.n ?? 0);
    } finally {
      await client.end();
    }
  }

  it('cached keys keep working, the rest answers 503 fast, and usage waits in Redis until Postgres is back', async () => {
    const warm = await keyWithPlan(a, 'cached', 1_000);
    const cold = await keyWithPlan(a, 'never-used');
    for (const t of [a, b])
      expect((await series(t, warm.secret, 3, '/v1/pg')).statuses).toEqual([200, 200, 200]);
    await sleep(2_500);

    await postgres.stop();
    for (const t of [a, b]) {
      const during = await series(t, warm.secret, 10, '/v1/pg');
      expect(during.statuses).toEqual(Array(10).fill(200));
      expect(during.slowestMs).toBeLessThan(REDIS_BOUND_MS);
    }
    for (const secret of [cold.secret, 'tg_' + randomBytes(32).toString('base64url')]) {
      const res = await hitFull(a, secret, '/v1/pg');
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 503, code: 'auth_unavailable' });
      expect(res.ms).toBeLessThan(5_000);
    }
    const started = performance.now();
    const list = await a.admin('GET', '/consumer-api-key');
    expect({ status: list.status, code: list.body.code }).toEqual({
      status: 503,
      code: 'database_unavailable',
    });
    const created = await b.admin('POST', '/consumer-api-key/create', { name: 'while-down' });
    expect({ status: created.status, code: created.body.code }).toEqual({
      status: 503,
      code: 'database_unavailable',
    });
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(await fetchWithin(a.opsUrl + '/readyz', {}, async (r) => r.status)).toBe(503);
    const flushFailed = await waitFor(
      async () => a.output.concat(b.output).some((l) => l.includes('usage flush to Postgres failed')),
      (x) => x,
      { timeoutMs: 4_000 },
    );
    expect(flushFailed.value).toBe(true);

    await postgres.restart();
    // A poll that meets a keep-alive socket the ops server closed while Postgres restarted (seconds
    // on a loaded machine) counts as "not ready yet", like a probe that gets no answer.
    const readyz = (t: Tollgate) =>
      fetch(t.opsUrl + '/readyz').then(
        (r) => r.status,
        () => 0,
      );
    const ready = await Promise.all(
      [a, b].map((t) =>
        waitFor(
          () => readyz(t),
          (s) => s === 200,
          { timeoutMs: 15_000, everyMs: 100 },
        ),
      ),
    );
    expect(ready.map((r) => r.value)).toEqual([200, 200]);
    // 6 before, 20 during: the 20 waited in Redis and reach Postgres with the next flush.
    const usage = await Promise.all(
      [a, b].map((t) =>
        waitFor(
          () => totalOn(t, warm.id),
          (n) => n === 26,
          { timeoutMs: 10_000 },
        ),
      ),
    );
    expect(usage.map((u) => u.value)).toEqual([26, 26]);
    const stored = await waitFor(
      () => storedRequests(warm.id),
      (n) => n === 26,
      { timeoutMs: 10_000, everyMs: 200 },
    );
    expect(stored.value).toBe(26);
    expect((await hitFull(a, cold.secret, '/v1/pg')).status).toBe(200);
    expect((await b.admin('POST', '/consumer-api-key/create', { name: 'after' })).status).toBe(201);
  }, 60_000);
});
