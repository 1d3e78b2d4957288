/**
 * Usage is billing data: two built replicas on a private redis-server under steady load, Redis paused
 * (SIGSTOP) for 3, 8, 20 and 60 seconds and resumed. However long the hang, the key's totals equal the
 * responses the clients received, exactly: pushes that timed out are sent again as the same push.
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
  deployment = new Replicas({ DATABASE_URL: database.url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: testKeyPrefix(), UPSTREAM_URL: backend.url });
  replicas = await deployment.start(2);
}, 60_000);

afterAll(async () => {
  redis?.resume();
  await deployment?.stopAll();
  await Promise.all([backend?.close(), redis?.destroy(), database?.drop()]);
  if (replicas) expectNoSecretsLogged();
}, 60_000);

/** What the key's detail shows, on either replica. */
async function usageOf(t: Tollgate, keyId: string): Promise<{ total: number; successful: number } | undefined> {
  const detail = await t.admin('GET', `/consumer-api-key/${keyId}`).catch(() => undefined);
  if (detail?.status !== 200) return undefined;
  return { total: detail.body.usage.totalRequests, successful: detail.body.usage.successfulRequests };
}

it.each([3, 8, 20, 60])('Redis paused %i s under load: totals and buckets equal the responses clients got', async (seconds) => {
  const key = await keyWithPlan(replicas[0]!, `paused-${seconds}s`, 10_000_000);
  let answered = 0;
  let successful = 0;
  let running = true;
  const loop = async (t: Tollgate) => {
    while (running) {
      const res = await hitFull(t, key.secret, '/v1/billed').catch(() => undefined);
      if (res !== undefined) {
        answered++;
        if (res.status < 400) successful++;
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
    replicas.map((t) => waitFor(() => usageOf(t, key.id), (u) => u?.total === answered, { timeoutMs: 20_000, everyMs: 250 })),
  );
  console.log(`Redis paused ${seconds} s: ${answered} answered (${successful} below 400), shown ${shown.map((s) => JSON.stringify(s.value)).join(' / ')}`);
  expect(shown.map((s) => s.value)).toEqual([
    { total: answered, successful },
    { total: answered, successful },
  ]);
  // And still exact once everything reached Postgres.
  await sleep(2_500);
  expect(await usageOf(replicas[1]!, key.id)).toEqual({ total: answered, successful });
  // Usage over time counted the same requests once: its buckets add up to the same figures.
  const overTime = await replicas[0]!.admin('GET', `/consumer-api-key/${key.id}/usage?granularity=hour`);
  const sum = (field: 'requests' | 'successful') => (overTime.body.buckets as Record<string, number>[]).reduce((n, b) => n + b[field]!, 0);
  expect({ total: sum('requests'), successful: sum('successful') }).toEqual({ total: answered, successful });
}, 150_000);
