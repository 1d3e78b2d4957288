/**
 * Usage is billing data: two built replicas on a private redis-server under steady load, Redis paused
 * (SIGSTOP) for 3, 8, 20 and 60 seconds and resumed. The load comes from the two keys of a consumer
 * (the consumer's plan shared by both, one of them with a plan of its own too), on both replicas.
 * However long the hang, each key's totals and the consumer's equal the responses the clients
 * received, exactly: pushes that timed out are sent again as the same push. So do the buckets of
 * usage over time and the facts they carry with them: the units charged, what the clients got by
 * status class, why requests failed (one in five asks the backend for a 503), and the route each
 * request took (route `billed`, or the catch-all for one in five).
 */
import { Redis } from 'ioredis';
import { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { consumerWithKeys, hitFull, Replicas, sleep, usageOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';
import { usageDrained } from './helpers/usage-flushed.js';

let backend: Backend;
let redis: RedisServer;
let database: TestDatabase;
let deployment: Replicas;
let replicas: Tollgate[];
/** Reads whether Redis still holds usage for Postgres. */
let drained: Redis;
const prefix = testKeyPrefix();

beforeAll(async () => {
  [backend, redis, database] = await Promise.all([startBackend(), RedisServer.start(), createTestDatabase()]);
  drained = new Redis(redis.url);
  deployment = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: prefix,
    UPSTREAM_URL: backend.url,
  });
  replicas = await deployment.start(2);
  const route = { routeId: 'billed', match: { pathPrefix: '/v1/billed' }, upstreamUrl: backend.url };
  expect((await replicas[0]!.admin('POST', '/tollgate/routes', route)).status).toBe(201);
  // In force on every replica within a second (docs/guides/routes.md).
  await sleep(1_500);
}, 60_000);

afterAll(async () => {
  redis?.resume();
  drained?.disconnect();
  await deployment?.stopAll();
  await Promise.all([backend?.close(), redis?.destroy(), database?.drop()]);
  if (replicas) expectNoSecretsLogged();
}, 60_000);

/** Tollgate's refusals among the answers: not forwarded, nothing charged. */
const REFUSALS = new Set(['limit_unavailable', 'rate_limit_exceeded']);

interface Bucket {
  requests: number;
  successful: number;
  cost: number;
  statusClasses: Record<string, number>;
  outcomes: Record<string, number>;
  latencyMs: { p50: number | null };
}

/** What the clients saw, as the usage should count it. */
interface Seen {
  total: number;
  successful: number;
  cost: number;
  statusClasses: Record<string, number>;
  backendError: number;
  backendUnreachable: number;
}

const nothingSeen = (): Seen => ({
  total: 0,
  successful: 0,
  cost: 0,
  statusClasses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 },
  backendError: 0,
  backendUnreachable: 0,
});

/** The same figures summed from buckets of usage over time (at `path`). */
async function countedOverTime(t: Tollgate, path: string): Promise<{ seen: Seen; buckets: Bucket[] }> {
  const buckets = (await t.admin('GET', `${path}?granularity=hour`)).body.buckets as Bucket[];
  const sum = (value: (b: Bucket) => number) => buckets.reduce((n, b) => n + value(b), 0);
  return {
    buckets,
    seen: {
      total: sum((b) => b.requests),
      successful: sum((b) => b.successful),
      cost: sum((b) => b.cost),
      statusClasses: Object.fromEntries(
        Object.keys(nothingSeen().statusClasses).map((c) => [c, sum((b) => b.statusClasses[c]!)]),
      ),
      backendError: sum((b) => b.outcomes.backendError!),
      backendUnreachable: sum((b) => b.outcomes.backendUnreachable!),
    },
  };
}

it.each([3, 8, 20, 60])(
  'Redis paused %i s under load: the totals and buckets of each key and of their consumer equal the responses clients got',
  async (seconds) => {
    const account = await consumerWithKeys(replicas[0]!, `paused-${seconds}s`, {
      keys: 2,
      limit: 10_000_000,
      keyLimit: 10_000_000,
    });
    const byKey = account.keys.map(nothingSeen);
    let running = true;
    // Each request once under the route it took, per key.
    const seenRoutes = account.keys.map(() => ({ billed: 0, catchAll: 0 }));
    // Each client alternates between the two keys, on its replica.
    const loop = async (t: Tollgate, n: number) => {
      for (let i = 0; running; i++) {
        const k = (i + n) % account.keys.length;
        const path = i % 5 === 0 ? '/v1/billed/status/503' : i % 5 === 1 ? '/v1/unrouted' : '/v1/billed';
        const res = await hitFull(t, account.keys[k]!.secret, path).catch(() => undefined);
        if (res !== undefined) {
          const seen = byKey[k]!;
          seen.total++;
          seenRoutes[k]![path === '/v1/unrouted' ? 'catchAll' : 'billed']++;
          if (res.status < 400) seen.successful++;
          const code = (res.body as { code?: unknown } | undefined)?.code;
          seen.statusClasses[`${Math.floor(res.status / 100)}xx`]!++;
          if (!REFUSALS.has(code as string)) seen.cost++;
          if (res.status >= 500 && code === undefined) seen.backendError++;
          if (code === 'bad_gateway' || code === 'gateway_timeout') seen.backendUnreachable++;
        }
        // About 40 requests a second per client: every flush of the hang still holds requests of both
        // keys, and the proof costs a fraction of the CPU the run shares.
        await sleep(20);
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

    const all = nothingSeen();
    for (const seen of byKey) {
      for (const field of ['total', 'successful', 'cost', 'backendError', 'backendUnreachable'] as const)
        all[field] += seen[field];
      for (const c of Object.keys(all.statusClasses)) all.statusClasses[c]! += seen.statusClasses[c]!;
    }
    const views = [
      ...account.keys.map((key, k) => ({ path: `/consumer-api-key/${key.id}`, seen: byKey[k]! })),
      { path: `/tollgate/consumers/${account.consumerId}`, seen: all },
    ];
    const totals = ({ total, successful }: Seen) => ({ total, successful });

    // Every view on every replica, within the time the store takes to catch up.
    const shown = await Promise.all(
      views.flatMap(({ path, seen }) =>
        replicas.map((t) =>
          waitFor(
            () => usageOn(t, path),
            (u) => u?.total === seen.total,
            { timeoutMs: 20_000, everyMs: 250 },
          ),
        ),
      ),
    );
    console.log(
      `Redis paused ${seconds} s: ${all.total} answered (${all.successful} below 400; keys ${byKey.map((s) => s.total).join(' + ')}), shown ${shown.map((s) => JSON.stringify(s.value)).join(' / ')}`,
    );
    expect(shown.map((s) => s.value)).toEqual(views.flatMap(({ seen }) => replicas.map(() => totals(seen))));
    // And still exact once everything reached Postgres.
    await waitFor(
      () => usageDrained(drained, prefix),
      (d) => d,
      { timeoutMs: 20_000, everyMs: 250, what: 'the usage in Redis all moved to Postgres' },
    );
    for (const { path, seen } of views) expect(await usageOn(replicas[1]!, path)).toEqual(totals(seen));

    // Usage over time counted the same requests once, the consumer's as each key's: every fact once
    // too (units charged, status classes and outcomes).
    for (const [k, key] of account.keys.entries())
      expect((await countedOverTime(replicas[0]!, `/consumer-api-key/${key.id}/usage`)).seen).toEqual(
        byKey[k],
      );
    const consumer = await countedOverTime(replicas[1]!, `/tollgate/consumers/${account.consumerId}/usage`);
    expect(consumer.seen).toEqual(all);
    expect(consumer.buckets.every((b) => (b.requests === 0) === (b.latencyMs.p50 === null))).toBe(true);
    const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19) + 'Z';
    for (const [k, key] of account.keys.entries()) {
      const byRoute = await replicas[1]!.admin(
        'GET',
        `/consumer-api-key/${key.id}/usage?granularity=day&from=${from}&groupBy=route`,
      );
      const series = byRoute.body.series as { routeId: string | null; buckets: Bucket[] }[];
      const routeTotal = (routeId: string | null) =>
        series.find((s) => s.routeId === routeId)?.buckets.reduce((n, b) => n + b.requests, 0);
      expect({ billed: routeTotal('billed'), catchAll: routeTotal(null) }).toEqual(seenRoutes[k]);
    }
  },
  150_000,
);
