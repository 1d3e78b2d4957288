/**
 * Endpoint, customer and route series through Redis (replicas) into a real Postgres: each request is filed
 * under the day and month it happened in, even when Redis holds a key's usage across midnight at a
 * month end because Postgres is down; usage pushed by a replica of the previous version (no days) is
 * filed under the day it is applied, and the key's buckets still add up to its totals.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { openPostgres, type DbHandle } from '../../src/store/db.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { UsageHistory } from '../../src/usage/history.js';
import { UsageHistoryRepository, type SeriesBy } from '../../src/usage/history-repository.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageFlusher } from '../../src/usage/redis/flusher.js';
import { RedisPendingUsage } from '../../src/usage/redis/pending.js';
import { RedisUsageSink } from '../../src/usage/redis/sink.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import {
  emptyBucket,
  emptyKeyUsage,
  minuteOf,
  type UsageBatch,
  type UsageSink,
} from '../../src/usage/usage.js';
import { freePort } from '../helpers/redis-server.js';
import { refused, requestFacts } from '../helpers/request-facts.js';
import { REDIS_URL, createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';

const logger = createLogger('silent');
const metrics = new Metrics();
const MIDNIGHT = Date.UTC(2026, 10, 1);
let database: TestDatabase;
let handle: DbHandle;
/** A Postgres nobody listens on: the outage, for real. */
let deadHandle: DbHandle;
let client: Redis;
let keys: KeyRepository;
let history: UsageHistoryRepository;

beforeAll(async () => {
  database = await createTestDatabase();
  handle = await database.open();
  await migrate(handle);
  keys = new KeyRepository(handle.db);
  history = new UsageHistoryRepository(handle.db);
  deadHandle = await openPostgres(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
  client = new Redis(REDIS_URL, { enableAutoPipelining: true, enableOfflineQueue: false, lazyConnect: true });
  await client.connect();
});

afterAll(async () => {
  await client.quit();
  await deadHandle.close();
  await handle.close();
  await database.drop();
});

async function newKey(): Promise<string> {
  const id = 'key_series_' + randomBytes(6).toString('hex');
  await keys.insert({
    id,
    name: id,
    secretHash: randomBytes(32),
    secretCiphertext: randomBytes(40),
    createdAt: new Date(MIDNIGHT - 86_400_000),
  });
  return id;
}

/** A key's series by name: [start (ISO day), requests, rate-limited] of each stored bucket. */
async function stored(keyId: string, by: SeriesBy, granularity: 'day' | 'month') {
  const series = await history.series(
    { keyId },
    by,
    granularity,
    Date.UTC(2026, 9, 1),
    Date.UTC(2026, 11, 1),
  );
  return Object.fromEntries(
    [...series].map(([name, buckets]) => [
      name,
      [...buckets]
        .sort(([a], [b]) => a - b)
        .map(([start, c]) => [new Date(start).toISOString().slice(0, 10), c.requests, c.rateLimited]),
    ]),
  );
}

it('files each request under its own day and month when Redis holds the key across midnight at a month end', async () => {
  const prefix = testKeyPrefix();
  const keyId = await newKey();
  const sink: UsageSink = new RedisUsageSink(client, prefix);
  const recorder = new UsageRecorder(sink, logger, metrics);
  // Two pushes into one live hash, either side of midnight, Postgres down for the first flush.
  const report = { endpoint: '/v1/report', customerId: 'acme', routeId: 'reports' };
  recorder.record(requestFacts(keyId, { ...report, durationMs: 10, atMs: MIDNIGHT - 5_000 }));
  recorder.record(requestFacts(keyId, { ...report, durationMs: 30, atMs: MIDNIGHT - 4_000 }));
  await recorder.flush();
  recorder.record(
    requestFacts(keyId, { ...report, ...refused('rateLimited'), durationMs: 2, atMs: MIDNIGHT + 3_000 }),
  );
  recorder.record(requestFacts(keyId, { ...report, routeId: null, durationMs: 2, atMs: MIDNIGHT + 4_000 }));
  await recorder.flush();
  await new UsageFlusher(client, prefix, new UsageRepository(deadHandle.db), logger, metrics).flush();

  // Still in Redis, the series already show each request on its day.
  const pending = new UsageHistory(
    history,
    new UsageReader(new UsageRepository(handle.db), [new RedisPendingUsage(client, prefix, logger, metrics)]),
  );
  const view = (by: SeriesBy) =>
    pending.seriesForKey(
      keyId,
      by,
      'day',
      Date.UTC(2026, 9, 31),
      Date.UTC(2026, 10, 2),
      MIDNIGHT + 3_600_000,
    );
  expect(
    (await view('customer')).map((s) => [
      s.name,
      s.buckets.map((b) => [b.requests, b.rateLimited, b.averageResponseTimeMs]),
    ]),
  ).toEqual([
    [
      'acme',
      [
        [2, 0, 20],
        [2, 1, 2],
      ],
    ],
  ]);
  expect(
    (await view('route')).map((s) => [s.name, s.buckets.map((b) => [b.requests, b.rateLimited])]),
  ).toEqual([
    [
      'reports',
      [
        [2, 0],
        [1, 1],
      ],
    ],
    [
      '',
      [
        [0, 0],
        [1, 0],
      ],
    ],
  ]);

  await new UsageFlusher(client, prefix, new UsageRepository(handle.db), logger, metrics).flush();
  for (const by of ['endpoint', 'customer'] as const) {
    const name = by === 'endpoint' ? '/v1/report' : 'acme';
    expect(await stored(keyId, by, 'day')).toEqual({
      [name]: [
        ['2026-10-31', 2, 0],
        ['2026-11-01', 2, 1],
      ],
    });
    expect(await stored(keyId, by, 'month')).toEqual({
      [name]: [
        ['2026-10-01', 2, 0],
        ['2026-11-01', 2, 1],
      ],
    });
  }
  expect(await stored(keyId, 'route', 'day')).toEqual({
    reports: [
      ['2026-10-31', 2, 0],
      ['2026-11-01', 1, 1],
    ],
    '': [['2026-11-01', 1, 0]],
  });
  expect(await stored(keyId, 'route', 'month')).toEqual({
    reports: [
      ['2026-10-01', 2, 0],
      ['2026-11-01', 1, 1],
    ],
    '': [['2026-11-01', 1, 0]],
  });
});

it("files a previous version's push (no days) under the day it is applied, beside a new replica's in the same hash", async () => {
  const prefix = testKeyPrefix();
  const keyId = await newKey();
  const recorder = new UsageRecorder(new RedisUsageSink(client, prefix), logger, metrics);
  recorder.record(requestFacts(keyId, { customerId: 'acme', durationMs: 10, atMs: MIDNIGHT + 60_000 }));
  await recorder.flush();
  // What a replica of the version before pushes: totals and minutes, no days.
  const previous = emptyKeyUsage();
  previous.endpoints.set('/v1/a', { requests: 2, successful: 2, failed: 0, totalDurationMs: 40, cost: 0 });
  previous.customers.set('acme', { requests: 2, successful: 2, failed: 0 });
  previous.minutes.set(minuteOf(MIDNIGHT + 120_000), {
    ...emptyBucket(),
    requests: 2,
    successful: 2,
    failed: 0,
    rateLimited: 0,
    totalDurationMs: 40,
  });
  const batch: UsageBatch = new Map([[keyId, previous]]);
  await new RedisUsageSink(client, prefix).write(batch);

  const applied = Date.UTC(2026, 10, 3, 8);
  await new UsageFlusher(
    client,
    prefix,
    new UsageRepository(handle.db, () => applied),
    logger,
    metrics,
  ).flush();
  expect(await stored(keyId, 'customer', 'day')).toEqual({
    acme: [
      ['2026-11-01', 1, 0],
      ['2026-11-03', 2, 0],
    ],
  });
  expect(await stored(keyId, 'endpoint', 'month')).toEqual({ '/v1/a': [['2026-11-01', 3, 0]] });
  // It took no route that it knows of: only the new replica's request is in a route series.
  expect(await stored(keyId, 'route', 'month')).toEqual({ '': [['2026-11-01', 1, 0]] });
  const buckets = await history.buckets({ keyId }, 'day', Date.UTC(2026, 9, 1), Date.UTC(2026, 11, 1));
  expect([...buckets.values()].reduce((n, b) => n + b.requests, 0)).toBe(3);
});

it("files a key's requests under the consumer it belonged to through Redis, every fact once, pending and stored alike", async () => {
  const prefix = testKeyPrefix();
  const keyId = await newKey();
  const recorder = new UsageRecorder(new RedisUsageSink(client, prefix), logger, metrics);
  const at = MIDNIGHT + 3_600_000;
  recorder.record(
    requestFacts(keyId, {
      consumerId: 'con_first',
      status: 503,
      outcome: 'backendError',
      durationMs: 40,
      atMs: at,
    }),
  );
  recorder.record(
    requestFacts(keyId, { consumerId: 'con_first', ...refused('rateLimited'), durationMs: 1, atMs: at }),
  );
  await recorder.flush();
  // Moved to another consumer: one push of each into the same live hash.
  recorder.record(requestFacts(keyId, { consumerId: 'con_second', durationMs: 10, atMs: at }));
  await recorder.flush();

  const reader = new UsageReader(new UsageRepository(handle.db), [
    new RedisPendingUsage(client, prefix, logger, metrics),
  ]);
  const view = new UsageHistory(history, reader);
  const hour = async (
    read: (
      from: number,
      to: number,
    ) => Promise<{ buckets: { requests: number; cost: number; outcomes: object; statusClasses: object }[] }>,
  ) => {
    const [bucket] = (await read(at, at + 3_600_000)).buckets;
    return {
      requests: bucket!.requests,
      cost: bucket!.cost,
      outcomes: bucket!.outcomes,
      statusClasses: bucket!.statusClasses,
    };
  };
  const expectations = async () => {
    expect(await hour((from, to) => view.forConsumer('con_first', [keyId], 'hour', from, to))).toEqual({
      requests: 2,
      cost: 1,
      outcomes: expect.objectContaining({ backendError: 1, rateLimited: 1 }),
      statusClasses: { '2xx': 0, '3xx': 0, '4xx': 1, '5xx': 1 },
    });
    expect(await hour((from, to) => view.forConsumer('con_second', [keyId], 'hour', from, to))).toMatchObject(
      { requests: 1, cost: 1, statusClasses: { '2xx': 1 } },
    );
    expect(await hour((from, to) => view.forKey(keyId, 'hour', from, to))).toMatchObject({
      requests: 3,
      cost: 2,
    });
    expect(await reader.readConsumer('con_first', [keyId])).toMatchObject({ totalRequests: 2, cost: 1 });
  };
  // Pending in Redis, then applied by a flusher (twice: the second is a no-op).
  await expectations();
  const flusher = new UsageFlusher(client, prefix, new UsageRepository(handle.db), logger, metrics);
  await flusher.flush();
  await flusher.flush();
  await expectations();
  expect(
    (await view.topConsumers('day', MIDNIGHT, MIDNIGHT + 86_400_000)).map((c) => [c.consumerId, c.requests]),
  ).toEqual([
    ['con_first', 2],
    ['con_second', 1],
  ]);
});
