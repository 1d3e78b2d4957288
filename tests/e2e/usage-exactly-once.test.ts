/**
 * Usage is billing data: two built replicas on a private redis-server under steady load, Redis paused
 * (SIGSTOP) for 3, 8, 20 and 60 seconds and resumed. However long the hang, the key's totals equal the
 * responses the clients received, exactly: pushes that timed out are sent again as the same push. So
 * do the facts the buckets carry with them: the units charged, what the clients got by status class
 * and why requests failed (one in five asks the backend for a 503), and the route each request took
 * (route `billed`, or the catch-all for one in five).
 */
import { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hitFull, keyWithPlan, Replicas, sleep, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let redis: RedisServer;
let database: TestDatabase;
let deployment: Replicas;
let replicas: Tollgate[];

beforeAll(async () => {
  [backend, redis, database] = await Promise.all([startBackend(), RedisServer.start(), createTestDatabase()]);
  deployment = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
  });
  replicas = await deployment.start(2);
  const route = { routeId: 'billed', match: { pathPrefix: '/v1/billed' }, upstreamUrl: backend.url };
  expect((await replicas[0]!.admin('POST', '/tollgate/routes', route)).status).toBe(201);
  // In force on every replica within a second (contract section 15).
  await sleep(1_500);
}, 60_000);

afterAll(async () => {
  redis?.resume();
  await deployment?.stopAll();
  await Promise.all([backend?.close(), redis?.destroy(), database?.drop()]);
  if (replicas) expectNoSecretsLogged();
}, 60_000);

/** What the key's detail shows, on either replica. */
async function usageOf(
  t: Tollgate,
  keyId: string,
): Promise<{ total: number; successful: number } | undefined> {
  const detail = await t.admin('GET', `/consumer-api-key/${keyId}`).catch(() => undefined);
  if (detail?.status !== 200) return undefined;
  return { total: detail.body.usage.totalRequests, successful: detail.body.usage.successfulRequests };
}

/** Tollgate's refusals among the answers: not forwarded, nothing charged. */
const REFUSALS = new Set(['limit_unavailable', 'rate_limit_exceeded']);

it.each([3, 8, 20, 60])(
  'Redis paused %i s under load: totals and buckets equal the responses clients got',
  async (seconds) => {
    const key = await keyWithPlan(replicas[0]!, `paused-${seconds}s`, 10_000_000);
    let answered = 0;
    let successful = 0;
    let running = true;
    // What the clients saw, as the buckets should count it.
    const seen = {
      cost: 0,
      statusClasses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 } as Record<string, number>,
      backendError: 0,
      backendUnreachable: 0,
    };
    const seenRoutes = { billed: 0, catchAll: 0 };
    const loop = async (t: Tollgate) => {
      for (let i = 0; running; i++) {
        const path = i % 5 === 0 ? '/v1/billed/status/503' : i % 5 === 1 ? '/v1/unrouted' : '/v1/billed';
        const res = await hitFull(t, key.secret, path).catch(() => undefined);
        if (res !== undefined) {
          answered++;
          seenRoutes[path === '/v1/unrouted' ? 'catchAll' : 'billed']++;
          if (res.status < 400) successful++;
          const code = (res.body as { code?: unknown } | undefined)?.code;
          seen.statusClasses[`${Math.floor(res.status / 100)}xx`]!++;
          if (!REFUSALS.has(code as string)) seen.cost++;
          if (res.status >= 500 && code === undefined) seen.backendError++;
          if (code === 'bad_gateway' || code === 'gateway_timeout') seen.backendUnreachable++;
        }
        await sleep(2);
      }
    };
    const loops = [...replicas, ...replicas].map(loop);
    await sleep(1_000);
    redis.pause();
    await sleep(seconds * 1_000);
    redis.resume();
    await sleep(1_500);
    running = false;
    await Promise.all(loops);

    const shown = await Promise.all(
      replicas.map((t) =>
        waitFor(
          () => usageOf(t, key.id),
          (u) => u?.total === answered,
          { timeoutMs: 20_000, everyMs: 250 },
        ),
      ),
    );
    console.log(
      `Redis paused ${seconds} s: ${answered} answered (${successful} below 400), shown ${shown.map((s) => JSON.stringify(s.value)).join(' / ')}`,
    );
    expect(shown.map((s) => s.value)).toEqual([
      { total: answered, successful },
      { total: answered, successful },
    ]);
    // And still exact once everything reached Postgres.
    await sleep(2_500);
    expect(await usageOf(replicas[1]!, key.id)).toEqual({ total: answered, successful });
    // Usage over time counted the same requests once: its buckets add up to the same figures.
    const overTime = await replicas[0]!.admin('GET', `/consumer-api-key/${key.id}/usage?granularity=hour`);
    type Bucket = {
      requests: number;
      successful: number;
      cost: number;
      statusClasses: Record<string, number>;
      outcomes: Record<string, number>;
      latencyMs: { p50: number | null };
    };
    const buckets = overTime.body.buckets as Bucket[];
    const sum = (value: (b: Bucket) => number) => buckets.reduce((n, b) => n + value(b), 0);
    expect({ total: sum((b) => b.requests), successful: sum((b) => b.successful) }).toEqual({
      total: answered,
      successful,
    });
    // Every fact once too: units charged, status classes and outcomes.
    expect({
      cost: sum((b) => b.cost),
      statusClasses: Object.fromEntries(
        Object.keys(seen.statusClasses).map((c) => [c, sum((b) => b.statusClasses[c]!)]),
      ),
      backendError: sum((b) => b.outcomes.backendError!),
      backendUnreachable: sum((b) => b.outcomes.backendUnreachable!),
    }).toEqual(seen);
    expect(buckets.every((b) => (b.requests === 0) === (b.latencyMs.p50 === null))).toBe(true);
    // And each request once under the route it took.
    const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19) + 'Z';
    const byRoute = await replicas[1]!.admin(
      'GET',
      `/consumer-api-key/${key.id}/usage?granularity=day&from=${from}&groupBy=route`,
    );
    const series = byRoute.body.series as { routeId: string | null; buckets: Bucket[] }[];
    const routeTotal = (routeId: string | null) =>
      series.find((s) => s.routeId === routeId)?.buckets.reduce((n, b) => n + b.requests, 0);
    expect({ billed: routeTotal('billed'), catchAll: routeTotal(null) }).toEqual(seenRoutes);
  },
  150_000,
);
