import { emptyFailureLog, leftOutKey } from '../../src/usage/failure-log.js';
import { FailureLogRepository } from '../../src/usage/failure-log-repository.js';
import { failureEntry } from '../helpers/failure-entry.js';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { openPostgres, type Db, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { UsageFlusher } from '../../src/usage/redis/flusher.js';
import { RedisPendingUsage } from '../../src/usage/redis/pending.js';
import { SEAL_MAX_KEYS } from '../../src/usage/redis/seal-script.js';
import { RedisUsageSink } from '../../src/usage/redis/sink.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { emptyBucket, emptyKeyUsage, type KeyUsage, type UsageBatch } from '../../src/usage/usage.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { RedisMonitor } from '../helpers/redis-monitor.js';
import { RedisServer, freePort } from '../helpers/redis-server.js';
import { REDIS_URL, createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { pendingTotal } from '../helpers/pending.js';
import { requestFacts } from '../helpers/request-facts.js';
import { previousFlush, previousPush } from '../fixtures/usage-redis-previous.js';

const logger = createLogger('silent');
const metrics = new Metrics();
let database: TestDatabase;
let handle: DbHandle;
let repository: UsageRepository;
/** A Postgres nobody listens on: the outage, for real. */
let deadHandle: DbHandle;
const clients: Redis[] = [];
const client = () => {
  const c = new Redis(REDIS_URL, {
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    lazyConnect: true,
  });
  clients.push(c);
  return c;
};

beforeAll(async () => {
  database = await createTestDatabase();
  handle = await database.open();
  await migrate(handle);
  repository = new UsageRepository(handle.db);
  const keys = new KeyRepository(handle.db);
  for (const id of ['key_1', 'key_2', 'key_3']) {
    await keys.insert({
      id,
      name: id,
      secretHash: randomBytes(32),
      secretCiphertext: randomBytes(40),
      createdAt: new Date(),
    });
  }
  deadHandle = await openPostgres(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit()));
  await deadHandle.close();
  await handle.close();
  await database.drop();
});

/** One replica's pieces under a shared prefix (one deployment). */
async function replica(prefix: string, repo: Pick<UsageRepository, 'applyBatch'> = repository) {
  const c = client();
  await c.connect();
  return {
    client: c,
    sink: new RedisUsageSink(c, prefix),
    pending: new RedisPendingUsage(c, prefix, logger, metrics),
    flusher: new UsageFlusher(c, prefix, repo, logger, metrics),
  };
}

/** A replica whose flusher dies (throws) right after Postgres committed its batch. */
const replicaDyingAfterCommit = (prefix: string) =>
  replica(prefix, {
    applyBatch: async (id, batch) => {
      await repository.applyBatch(id, batch);
      throw new Error('process killed after commit');
    },
  });

function usage(
  endpoints: Record<string, [number, number, number]>,
  customers: Record<string, [number, number]> = {},
): KeyUsage {
  const u = emptyKeyUsage();
  for (const [e, [ok, failed, ms]] of Object.entries(endpoints)) {
    u.endpoints.set(e, { requests: ok + failed, successful: ok, failed, totalDurationMs: ms, cost: 0 });
  }
  for (const [c, [ok, failed]] of Object.entries(customers))
    u.customers.set(c, { requests: ok + failed, successful: ok, failed });
  return u;
}

const batchOf = (entries: Record<string, KeyUsage>): UsageBatch => new Map(Object.entries(entries));
/** A key's stored totals, as the usage a batch carries for it (filed under no consumer). */
const stored = async (keyId: string): Promise<KeyUsage> => ({
  ...(await repository.read(keyId)),
  consumers: new Map(),
});
/** What the deployment keeps in Redis, less the short-lived push markers and the count of seals. */
const redisKeys = async (c: Redis, prefix: string) =>
  (await c.keys(prefix + '*')).filter((k) => !k.includes('{usage}:push:') && !k.endsWith('{usage}:seals'));

describe('Redis usage: push, pending view, flush to Postgres', () => {
  afterEach(async () => {
    await handle.db.deleteFrom('usage_endpoints').execute();
    await handle.db.deleteFrom('usage_customers').execute();
    await handle.db.deleteFrom('usage_buckets').execute();
  });

  it("carries each request's minute and 429s through Redis into the buckets, once", async () => {
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    const minute = Date.UTC(2026, 10, 22, 23, 59);
    const u = usage({ '/a': [2, 1, 30] });
    u.minutes.set(minute, {
      ...emptyBucket(),
      requests: 3,
      successful: 2,
      failed: 1,
      rateLimited: 1,
      totalDurationMs: 30,
    });
    await r.sink.write(batchOf({ key_1: u }));
    expect((await pendingTotal(r.pending, 'key_1'))?.minutes).toEqual(u.minutes);
    await r.flusher.flush();
    await r.flusher.flush();
    const rows = await handle.db
      .selectFrom('usage_buckets')
      .select(['granularity', 'start', 'requests', 'rate_limited', 'total_duration_ms'])
      .where('key_id', '=', 'key_1')
      .orderBy('granularity')
      .execute();
    expect(
      rows.map((row) => [
        row.granularity,
        row.start.toISOString(),
        Number(row.requests),
        Number(row.rate_limited),
        row.total_duration_ms,
      ]),
    ).toEqual([
      ['day', '2026-11-22T00:00:00.000Z', 3, 1, 30],
      ['hour', '2026-11-22T23:00:00.000Z', 3, 1, 30],
      ['minute', '2026-11-22T23:59:00.000Z', 3, 1, 30],
      ['month', '2026-11-01T00:00:00.000Z', 3, 1, 30],
    ]);
  });

  it('shows a push in the pending view, then moves it into Postgres and out of Redis', async () => {
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    await r.sink.write(
      batchOf({ key_1: usage({ '/a|b': [2, 1, 30.5], '/c': [1, 0, 4] }, { acme: [2, 1] }) }),
    );

    expect(await pendingTotal(r.pending, 'key_1')).toEqual(
      usage({ '/a|b': [2, 1, 30.5], '/c': [1, 0, 4] }, { acme: [2, 1] }),
    );
    expect(await pendingTotal(r.pending, 'key_2')).toBeUndefined();

    await r.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/a|b': [2, 1, 30.5], '/c': [1, 0, 4] }, { acme: [2, 1] }));
    expect(await pendingTotal(r.pending, 'key_1')).toBeUndefined();
    // Only the last-flush timestamp remains.
    expect(await redisKeys(r.client, prefix)).toEqual([prefix + '{usage}:flushed-at']);
  });

  it('pushes a second in which 20,000 keys were used (160,000 script arguments)', async () => {
    // Sent as one script and spread into a function call, arguments this many overflowed the stack
    // inside ioredis' auto-pipeline, which then threw out of a callback and ended the process.
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    const ids = Array.from({ length: 20_000 }, (_, i) => `key_many_${i}`);
    await r.sink.write(batchOf(Object.fromEntries(ids.map((id, i) => [id, usage({ '/p': [1, 0, i] })]))));
    expect(await pendingTotal(r.pending, 'key_many_0')).toEqual(usage({ '/p': [1, 0, 0] }));
    expect(await pendingTotal(r.pending, 'key_many_19999')).toEqual(usage({ '/p': [1, 0, 19_999] }));
    const live = await redisKeys(r.client, prefix);
    expect(live.length).toBe(20_001); // a hash per key, and the set naming them
    for (let i = 0; i < live.length; i += 1000) await r.client.del(...live.slice(i, i + 1000));
  });

  it('pushes a key used by 50,000 customers in one second (one script of 200,000 arguments), and flushes it to Postgres capped', async () => {
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    const customers = Object.fromEntries(
      Array.from({ length: 50_000 }, (_, i) => [`cust-${i}`, [1, 0] as [number, number]]),
    );
    await r.sink.write(batchOf({ key_1: usage({ '/p': [50_000, 0, 7] }, customers) }));
    const sumOf = (customers: Map<string, { requests: number }> | undefined) =>
      [...(customers ?? new Map()).values()].reduce((n, c) => n + c.requests, 0);
    // Shown and stored with the per-key cap: 10,000 customers, the rest under "(other)", sums intact.
    const pending = await pendingTotal(r.pending, 'key_1');
    expect(pending?.customers.size).toBe(10_001);
    expect(pending?.customers.get('(other)')?.requests).toBe(40_000);
    expect(sumOf(pending?.customers)).toBe(50_000);
    // And on into Postgres, whole.
    await r.flusher.flush();
    const saved = await stored('key_1');
    expect(saved?.customers.size).toBe(10_001);
    expect(sumOf(saved?.customers)).toBe(50_000);
    expect(saved?.endpoints.get('/p')).toEqual({
      requests: 50_000,
      successful: 50_000,
      failed: 0,
      totalDurationMs: 7,
      cost: 0,
    });
    expect(await pendingTotal(r.pending, 'key_1')).toBeUndefined();
  });

  it('adds up pushes from several replicas and concurrent flushers, counting each request once', async () => {
    const prefix = testKeyPrefix();
    const replicas = await Promise.all([1, 2, 3].map(() => replica(prefix)));
    const rounds = 30;
    for (let round = 0; round < rounds; round++) {
      // Every replica pushes and tries to flush at the same moment; the lock lets one through.
      await Promise.all(
        replicas.flatMap((r) => [
          r.sink.write(
            batchOf({
              key_2: usage({ '/x': [1, 1, 10] }, { c1: [1, 0] }),
              key_3: usage({ '/y': [1, 0, 2.25] }),
            }),
          ),
          r.flusher.flush(),
        ]),
      );
    }
    await replicas[0]!.flusher.flush();
    const n = rounds * replicas.length;
    expect(await stored('key_2')).toEqual(usage({ '/x': [n, n, 10 * n] }, { c1: [n, 0] }));
    expect(await stored('key_3')).toEqual(usage({ '/y': [n, 0, 2.25 * n] }));
    expect(await pendingTotal(replicas[1]!.pending, 'key_2')).toBeUndefined();
  });

  it('keeps usage in Redis while Postgres is down and moves it once Postgres is back', async () => {
    const prefix = testKeyPrefix();
    const down = await replica(prefix, new UsageRepository(deadHandle.db));
    const up = await replica(prefix);
    const failuresBefore =
      (await metrics.usageFlushFailures.get()).values.find((v) => v.labels.stage === 'apply')?.value ?? 0;

    await down.sink.write(batchOf({ key_1: usage({ '/a': [1, 0, 1] }) }));
    await down.flusher.flush();
    await down.sink.write(batchOf({ key_1: usage({ '/a': [1, 0, 1] }) }));
    await down.flusher.flush();

    const failuresAfter = (await metrics.usageFlushFailures.get()).values.find(
      (v) => v.labels.stage === 'apply',
    )!.value;
    expect(failuresAfter - failuresBefore).toBe(2);
    // The detail view still sees both requests: one sealed batch plus the live hash.
    expect(await pendingTotal(up.pending, 'key_1')).toEqual(usage({ '/a': [2, 0, 2] }));
    expect(await stored('key_1')).toEqual(emptyKeyUsage());

    await up.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/a': [2, 0, 2] }));
    expect(await pendingTotal(up.pending, 'key_1')).toBeUndefined();
  });

  it('applies a batch exactly once when the flusher dies after the seal, before Postgres', async () => {
    const prefix = testKeyPrefix();
    // The first flusher "dies" right after sealing: its Postgres call never lands.
    const dying = await replica(prefix, { applyBatch: () => Promise.reject(new Error('process killed')) });
    const next = await replica(prefix);
    await dying.sink.write(batchOf({ key_1: usage({ '/crash': [5, 0, 50] }) }));
    await dying.flusher.flush();
    expect(await dying.client.scard(prefix + '{usage}:batches')).toBe(1);
    // A killed process never unlocks: its lock stays until it expires.
    await dying.client.set(prefix + '{usage}:lock', 'token-of-the-dead', 'PX', 300);
    await next.sink.write(batchOf({ key_1: usage({ '/crash': [1, 0, 10] }) }));
    await next.flusher.flush();
    expect(await stored('key_1')).toEqual(emptyKeyUsage());
    await new Promise((r) => setTimeout(r, 350));
    await next.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/crash': [6, 0, 60] }));
    await next.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/crash': [6, 0, 60] }));
    expect(await redisKeys(next.client, prefix)).toEqual([prefix + '{usage}:flushed-at']);
  });

  it('does not count a batch twice when the flusher dies after the Postgres commit, before removing it', async () => {
    const prefix = testKeyPrefix();
    const dying = await replicaDyingAfterCommit(prefix);
    const next = await replica(prefix);
    await dying.sink.write(batchOf({ key_1: usage({ '/twice': [3, 1, 8] }) }));
    await dying.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/twice': [3, 1, 8] }));
    // Still sealed in Redis: the view may briefly show it twice until the next flush removes it.
    expect(await next.client.scard(prefix + '{usage}:batches')).toBe(1);
    await next.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/twice': [3, 1, 8] }));
    expect(await pendingTotal(next.pending, 'key_1')).toBeUndefined();
  });

  it("applies a batch's failure log entries once when the flusher dies after the Postgres commit and the batch is applied again", async () => {
    const prefix = testKeyPrefix();
    const dying = await replicaDyingAfterCommit(prefix);
    const next = await replica(prefix);
    const keyId = 'key_failing_' + prefix.slice(-7, -1);
    const failing = usage({ '/a': [0, 2, 4] });
    const failures = emptyFailureLog();
    failures.entries.push(failureEntry({ requestId: 'once-1' }), failureEntry({ requestId: 'once-2' }));
    failures.leftOut.set(leftOutKey(failureEntry().atMs, null, 'backend_error'), 5);
    await dying.sink.write(batchOf({ [keyId]: { ...failing, failures } }));
    await dying.flusher.flush();
    await next.flusher.flush();
    const log = new FailureLogRepository(handle.db);
    const all = { scope: { keyId }, fromMs: 0, toMs: Number.MAX_SAFE_INTEGER };
    expect((await log.list({ ...all, limit: 10 })).map((f) => f.requestId).sort()).toEqual([
      'once-1',
      'once-2',
    ]);
    expect(await log.leftOut(all)).toBe(5);
  });

  it('lets only one replica flush at a time', async () => {
    const prefix = testKeyPrefix();
    const a = await replica(prefix);
    let release!: () => void;
    let applying!: () => void;
    const applyStarted = new Promise<void>((r) => (applying = r));
    const slow = await replica(prefix, {
      applyBatch: async (id, batch) => {
        applying();
        await new Promise<void>((r) => (release = r));
        return repository.applyBatch(id, batch);
      },
    });
    await slow.sink.write(batchOf({ key_2: usage({ '/lock': [1, 0, 1] }) }));
    const first = slow.flusher.flush();
    await applyStarted;
    await a.sink.write(batchOf({ key_2: usage({ '/lock': [1, 0, 1] }) }));
    await a.flusher.flush(); // the lock is held: nothing happens
    expect(await pendingTotal(a.pending, 'key_2')).toEqual(usage({ '/lock': [2, 0, 2] }));
    release();
    await first;
    await a.flusher.flush();
    expect(await stored('key_2')).toEqual(usage({ '/lock': [2, 0, 2] }));
  });

  it('shows pending requests under the paths Postgres holds, even when the pending parts together pass the 1,000-path cap', async () => {
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    const paths = (name: string, n: number) =>
      Object.fromEntries(
        Array.from({ length: n }, (_, i) => [`/${name}${i}`, [1, 0, 1] as [number, number, number]]),
      );
    await repository.applyBatch(undefined, batchOf({ key_3: usage(paths('held', 1_000)) }));
    // Another replica pushed 1,000 paths Postgres does not hold; this process has one it does.
    await r.sink.write(batchOf({ key_3: usage(paths('new', 1_000)) }));
    const recorder = new UsageRecorder(
      { write: () => Promise.reject(new Error('not flushed in this test')), heldRequests: () => 0 },
      logger,
      metrics,
    );
    recorder.record(requestFacts('key_3', { endpoint: '/held7' }));
    const view = await new UsageReader(repository, [r.pending, recorder]).read('key_3');
    const requestsOf = (path: string) => view.endpoints.find((e) => e.endpoint === path)?.requests;
    expect(requestsOf('/held7')).toBe(2);
    expect(requestsOf('(other)')).toBe(1_000);
    expect(view.endpoints).toHaveLength(1_001);
    expect(view.totalRequests).toBe(2_001);
  });

  it('shows live usage once when a flush seals and stores it between the read of Redis and the read of Postgres', async () => {
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    await r.sink.write(batchOf({ key_2: usage({ '/live': [3, 0, 3] }) }));
    // The flusher runs in the gap the reader leaves between Redis and Postgres, once.
    let flushes = 0;
    class FlushedInTheGap extends UsageRepository {
      override async inSnapshot<T>(batchIds: readonly string[], read: (snapshot: Db) => Promise<T>) {
        if (flushes++ === 0) await r.flusher.flush();
        return super.inSnapshot(batchIds, read);
      }
    }
    const noLocalUsage = { pending: () => Promise.resolve([]) };
    const view = await new UsageReader(new FlushedInTheGap(handle.db), [r.pending, noLocalUsage]).read(
      'key_2',
    );
    expect(flushes).toBe(2);
    expect(view.totalRequests).toBe(3);
    expect(await stored('key_2')).toEqual(usage({ '/live': [3, 0, 3] }));
  });

  it('shows recorded usage when this process hands it to Redis between the read of Redis and its own', async () => {
    const r = await replica(testKeyPrefix());
    const recorder = new UsageRecorder(r.sink, logger, metrics);
    const storedBefore = (await new UsageReader(repository, []).read('key_1')).totalRequests;
    for (let i = 0; i < 3; i++) recorder.record(requestFacts('key_1', { endpoint: '/handed' }));
    // The recorder's once-a-second write lands in the gap the reader leaves between Redis and this process, once.
    let reads = 0;
    class HandedOverInTheGap extends UsageRepository {
      override async inSnapshot<T>(batchIds: readonly string[], read: (snapshot: Db) => Promise<T>) {
        if (reads++ === 0) await recorder.flush();
        return super.inSnapshot(batchIds, read);
      }
    }
    const view = await new UsageReader(new HandedOverInTheGap(handle.db), [r.pending, recorder]).read(
      'key_1',
    );
    expect(view.totalRequests).toBe(storedBefore + 3);
    // Read again: the first read found the hand-over under way.
    expect(reads).toBe(2);
  });

  it('shows recorded usage whose hand-over to Redis began before the read and lands in its gap', async () => {
    const r = await replica(testKeyPrefix());
    let land!: () => void;
    const landing = new Promise<void>((resolve) => (land = resolve));
    const slowSink = {
      write: async (batch: UsageBatch) => {
        await landing;
        await r.sink.write(batch);
      },
      heldRequests: () => r.sink.heldRequests(),
    };
    const recorder = new UsageRecorder(slowSink, logger, metrics);
    const storedBefore = (await new UsageReader(repository, []).read('key_2')).totalRequests;
    for (let i = 0; i < 4; i++) recorder.record(requestFacts('key_2', { endpoint: '/in-flight' }));
    // Handed over (no longer the recorder's), not yet in Redis when the reader reads Redis.
    const handOver = recorder.flush();
    let reads = 0;
    class LandedInTheGap extends UsageRepository {
      override async inSnapshot<T>(batchIds: readonly string[], read: (snapshot: Db) => Promise<T>) {
        if (reads++ === 0) {
          land();
          await handOver;
        }
        return super.inSnapshot(batchIds, read);
      }
    }
    const view = await new UsageReader(new LandedInTheGap(handle.db), [r.pending, recorder]).read('key_2');
    expect(view.totalRequests).toBe(storedBefore + 4);
    // Read again: the first read found the hand-over under way.
    expect(reads).toBe(2);
  });

  it('reads a key detail once while Redis does not answer, a hand-over under way or not', async () => {
    const dead = new Redis({
      port: await freePort(),
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    const stuck = { write: () => new Promise<void>(() => {}), heldRequests: () => 0 };
    const recorder = new UsageRecorder(stuck, logger, metrics);
    recorder.record(requestFacts('key_3', { endpoint: '/stuck' }));
    void recorder.flush();
    let reads = 0;
    class Counted extends UsageRepository {
      override async inSnapshot<T>(batchIds: readonly string[], read: (snapshot: Db) => Promise<T>) {
        reads++;
        return super.inSnapshot(batchIds, read);
      }
    }
    const pending = new RedisPendingUsage(dead, testKeyPrefix(), logger, metrics);
    await new UsageReader(new Counted(handle.db), [pending, recorder]).read('key_3');
    // Reading again would only wait on Redis again: what it holds shows once it answers.
    expect(reads).toBe(1);
  });

  it('rejects a push while Redis is unreachable, so the recorder keeps the batch', async () => {
    const dead = new Redis({
      port: await freePort(),
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    await expect(
      new RedisUsageSink(dead, testKeyPrefix()).write(batchOf({ key_1: usage({ '/a': [1, 0, 1] }) })),
    ).rejects.toThrow();
  });
});

describe('Redis usage during a rolling upgrade: replicas of the previous version alongside', () => {
  afterEach(async () => {
    await handle.db.deleteFrom('usage_endpoints').execute();
    await handle.db.deleteFrom('usage_customers').execute();
  });

  it('shows and flushes what replicas of the previous version push, each request once', async () => {
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    await previousPush(
      r.client,
      prefix,
      batchOf({
        key_1: usage({ '/v1|a': [2, 1, 30.5] }, { acme: [2, 1] }),
        key_2: usage({ '/b': [1, 0, 2] }),
      }),
    );
    await r.sink.write(batchOf({ key_1: usage({ '/v1|a': [1, 0, 4] }) }));
    expect(await pendingTotal(r.pending, 'key_1')).toEqual(
      usage({ '/v1|a': [3, 1, 34.5] }, { acme: [2, 1] }),
    );
    await r.flusher.flush();
    await previousPush(r.client, prefix, batchOf({ key_1: usage({ '/v1|a': [1, 0, 1] }) }));
    expect(await pendingTotal(r.pending, 'key_1')).toEqual(usage({ '/v1|a': [1, 0, 1] }));
    await r.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/v1|a': [4, 1, 35.5] }, { acme: [2, 1] }));
    expect(await stored('key_2')).toEqual(usage({ '/b': [1, 0, 2] }));
    expect(await redisKeys(r.client, prefix)).toEqual([prefix + '{usage}:flushed-at']);
  });

  it('lets a flusher of the previous version move what new replicas push, and finishes a batch one of them sealed before it died', async () => {
    const prefix = testKeyPrefix();
    const r = await replica(prefix);
    const applyOnce = (batchId: string, batch: UsageBatch) => repository.applyBatch(batchId, batch);
    await r.sink.write(batchOf({ key_1: usage({ '/a': [2, 0, 3] }, { acme: [1, 1] }) }));
    await previousFlush(r.client, prefix, applyOnce);
    expect(await stored('key_1')).toEqual(usage({ '/a': [2, 0, 3] }, { acme: [1, 1] }));

    await r.sink.write(batchOf({ key_1: usage({ '/a': [1, 0, 1] }) }));
    await expect(
      previousFlush(r.client, prefix, () => Promise.reject(new Error('process killed'))),
    ).rejects.toThrow('process killed');
    expect(await r.client.scard(prefix + '{usage}:batches')).toBe(1);
    expect(await pendingTotal(r.pending, 'key_1')).toEqual(usage({ '/a': [1, 0, 1] }));
    await r.flusher.flush();
    expect(await stored('key_1')).toEqual(usage({ '/a': [3, 0, 4] }, { acme: [1, 1] }));
    expect(await redisKeys(r.client, prefix)).toEqual([prefix + '{usage}:flushed-at']);
  });
});

// A server of its own: SLOWLOG, INFO and maxmemory are server-wide.
describe('Redis usage: pushes of many keys', () => {
  let server: RedisServer;
  let c: Redis;
  let admin: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    c = new Redis(server.url, { enableAutoPipelining: true, enableOfflineQueue: false, lazyConnect: true });
    await c.connect();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    await Promise.all([c.quit(), admin.quit()]);
    await server.destroy();
  });
  afterEach(async () => {
    await admin.config('SET', 'maxmemory', '0');
    await admin.flushall();
  });

  const manyKeys = (n: number) =>
    batchOf(
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`key_m${i}`, usage({ '/p': [1, 0, 1] })])),
    );
  /** Requests counted in Redis per key, from the live hashes. */
  async function countedPerKey(prefix: string, n: number): Promise<number[]> {
    const p = admin.pipeline();
    for (let i = 0; i < n; i++) p.hget(`${prefix}{usage}:live:key_m${i}`, 'e|/p|r');
    return ((await p.exec()) ?? []).map(([, v]) => Number(v ?? 0));
  }

  it('never holds Redis for long: 20,000 keys go in pushes of a few hundred, not one script for all', async () => {
    const prefix = testKeyPrefix();
    const monitor = await RedisMonitor.start(server.url);
    await new RedisUsageSink(c, prefix).write(manyKeys(20_000));
    await monitor.caughtUp(c);
    monitor.close();
    // Each push names its dirty set, its marker and the live hash of each of its keys; a push sent again
    // by EVAL after NOSCRIPT is the same push (the same marker).
    const pushes = new Map(
      monitor.commands
        .filter((command) => command.args[0] === 'evalsha' || command.args[0] === 'eval')
        .map((command) => [command.args[4], Number(command.args[2]) - 2] as const),
    );
    const keysPerPush = [...pushes.values()];
    expect(keysPerPush.reduce((n, k) => n + k, 0)).toBe(20_000);
    expect(Math.max(...keysPerPush)).toBeLessThan(1_000);
    expect(keysPerPush.length).toBeGreaterThanOrEqual(20);
    expect(await countedPerKey(prefix, 20_000)).toEqual(Array.from({ length: 20_000 }, () => 1));
  });

  it('flushes 20,000 keys a thousand at a time: no script for all of them, each thousand a batch applied once', async () => {
    const prefix = testKeyPrefix();
    await new RedisUsageSink(c, prefix).write(manyKeys(20_000));
    const monitor = await RedisMonitor.start(server.url);
    const applied: UsageBatch[] = [];
    // Postgres is not what this is about: a store that takes every batch.
    const flusher = new UsageFlusher(
      c,
      prefix,
      { applyBatch: (_id, batch) => Promise.resolve(applied.push(batch) > 0) },
      logger,
      metrics,
    );
    await flusher.flush();
    await monitor.caughtUp(c);
    monitor.close();
    // Each script call names its keys; a seal names two per API key (its live and its batch hash) and four more.
    const scripts = monitor.commands.filter(
      (command) => command.args[0] === 'evalsha' || command.args[0] === 'eval',
    );
    expect(scripts.length).toBeGreaterThanOrEqual(3 * 20);
    expect(Math.max(...scripts.map((command) => Number(command.args[2])))).toBe(4 + 2 * SEAL_MAX_KEYS);
    expect(applied.map((batch) => batch.size)).toEqual(Array(20).fill(SEAL_MAX_KEYS));
    expect(new Set(applied.flatMap((batch) => [...batch.keys()])).size).toBe(20_000);
    expect(
      applied.every((batch) => [...batch.values()].every((u) => u.endpoints.get('/p')?.requests === 1)),
    ).toBe(true);
    expect(await redisKeys(admin, prefix)).toEqual([prefix + '{usage}:flushed-at']);
  });

  it('when Redis refuses part-way, keeps only the keys whose pushes failed and counts every request once', async () => {
    const prefix = testKeyPrefix();
    const recorder = new UsageRecorder(new RedisUsageSink(c, prefix), logger, metrics);
    for (let i = 0; i < 20_000; i++) recorder.record(requestFacts(`key_m${i}`, { endpoint: '/p' }));
    // Room for some of the pushes, not all: Redis answers OOM to the rest.
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
    await admin.config('SET', 'maxmemory', String(used + 1_500_000));
    await recorder.flush();
    const landed = (await countedPerKey(prefix, 20_000)).filter((n) => n === 1).length;
    expect(landed).toBeGreaterThan(0);
    expect(landed).toBeLessThan(20_000);
    await admin.config('SET', 'maxmemory', '0');
    await recorder.flush();
    expect(await countedPerKey(prefix, 20_000)).toEqual(Array.from({ length: 20_000 }, () => 1));
  });
});
