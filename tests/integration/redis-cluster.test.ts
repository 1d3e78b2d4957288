import { randomBytes } from 'node:crypto';
import type { Cluster } from 'ioredis';
import type { KeyChange } from '../../src/keys/key-events.js';
import { RedisKeyEvents } from '../../src/keys/redis-key-events.js';
import type { Subject } from '../../src/plans/subject.js';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { windowAt } from '../../src/plans/window.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import type { DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { UsageFlusher } from '../../src/usage/redis/flusher.js';
import { RedisPendingUsage } from '../../src/usage/redis/pending.js';
import { RedisUsageSink } from '../../src/usage/redis/sink.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { emptyKeyUsage } from '../../src/usage/usage.js';
import { load } from '../helpers/limiter-load.js';
import { RedisCluster } from '../helpers/redis-cluster.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { pendingTotal } from '../helpers/pending.js';
import { keyOnly, plan } from '../helpers/plans.js';

const logger = createLogger('silent');
const metrics = new Metrics();
const prefix = testKeyPrefix();
let cluster: RedisCluster;
const replicas: RedisConnections[] = [];

/** A replica's connections through the same code path main.ts uses: REDIS_CLUSTER_NODES. */
async function replica(): Promise<RedisConnections> {
  // A generous deadline: this suite is about routing and atomicity on a Cluster, and it shares a
  // small machine with the rest of the suite; deadlines are tested in redis-failover.
  const r = connectRedis({ redisUrl: undefined, redisClusterNodes: cluster.nodes }, logger, {
    commandTimeoutMs: 5_000,
  });
  replicas.push(r);
  expect(await r.ready(10_000)).toBe(true);
  return r;
}

beforeAll(async () => {
  cluster = await RedisCluster.start();
}, 60_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await cluster?.stop();
});

describe('on a three-master Redis Cluster', () => {
  it('spreads key ids over the masters and admits exactly the limit per key', async () => {
    const limiters = await Promise.all(
      [1, 2, 3].map(async () => new RedisRateLimiter((await replica()).client, prefix, metrics)),
    );
    const keyIds = Array.from({ length: 12 }, () => 'key_' + randomBytes(8).toString('base64url'));
    const limit = 25;
    const now = Date.now();
    const decisions = await Promise.all(
      keyIds.flatMap((keyId) =>
        Array.from({ length: 80 }, (_, i) =>
          Promise.resolve(
            limiters[i % 3]!.consume(keyOnly(keyId, plan({ limit, period: 'minute' })), 1, now),
          ).then((d) => ({ keyId, d })),
        ),
      ),
    );
    for (const keyId of keyIds) {
      expect(decisions.filter((x) => x.keyId === keyId && x.d.allowed)).toHaveLength(limit);
      expect(
        (await limiters[0]!.peek(keyOnly(keyId, plan({ limit, period: 'minute' })), now))[0]!.remaining,
      ).toBe(0);
    }
    // The counters really are spread: each master holds some of them.
    const client = replicas[0]!.client as Cluster;
    const perMaster = await Promise.all(
      client.nodes('master').map((node) => node.keys(`${prefix}{*}:minute:${windowAt('minute', now).start}`)),
    );
    expect(perMaster.map((keys) => keys.length).reduce((a, b) => a + b)).toBe(keyIds.length);
    expect(perMaster.filter((keys) => keys.length > 0).length).toBeGreaterThan(1);
  });

  it('leases places to a busy replica and gets them back over the Cluster when another needs them', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const [holder, other] = [a!, b!].map(
      (r) => new RedisRateLimiter(r.client, prefix, metrics, { subscriber: r.subscriber }),
    );
    await Promise.all([holder!.ready(), other!.ready()]);
    const policy = plan({ limit: 2000, period: 'hour' });
    const keyId = 'key_' + randomBytes(8).toString('base64url');
    const counter = `${prefix}{${keyId}}:hour:${windowAt('hour', Date.now()).start}`;
    const early = await load(holder!, keyOnly(keyId, policy), 50, 4);
    // The holder took places ahead of its requests, and sits on them.
    expect(Number(await a!.client.get(counter))).toBeGreaterThan(early.length);
    const late = await load(other!, keyOnly(keyId, policy), 120, 20);
    expect(early.length + late.filter((d) => d.allowed).length).toBe(policy.limits[0]!.limit);
    expect(await a!.client.get(counter)).toBe(String(policy.limits[0]!.limit));
    await Promise.all([holder!.close(), other!.close()]);
  });

  it('decides a key and its consumer in one call on the consumer’s slot, exactly across replicas', async () => {
    const limiters = await Promise.all(
      [1, 2, 3].map(async () => {
        const r = await replica();
        const limiter = new RedisRateLimiter(r.client, prefix, metrics, { subscriber: r.subscriber });
        await limiter.ready();
        return limiter;
      }),
    );
    const consumer: Subject = {
      scope: 'consumer',
      id: 'con_' + randomBytes(8).toString('base64url'),
      plan: plan({ limit: 60, period: 'minute' }),
    };
    const keys = Array.from({ length: 6 }, (): Subject[] => [
      {
        scope: 'key',
        id: 'key_' + randomBytes(8).toString('base64url'),
        plan: plan({ limit: 15, period: 'minute' }),
      },
      consumer,
    ]);
    const now = Date.now();
    // One request per key first: each key then has a count (a key first seen under a consumer waits
    // for its own counts to be looked for elsewhere, and could find the consumer's 60 gone after that).
    for (const [k, subjects] of keys.entries())
      expect((await limiters[k % 3]!.consume(subjects, 1, now)).allowed).toBe(true);
    const decisions = await Promise.all(
      keys.flatMap((subjects, k) =>
        Array.from({ length: 29 }, (_, i) =>
          Promise.resolve(limiters[(i + k) % 3]!.consume(subjects, 1, now)).then((d) => ({ k, d })),
        ),
      ),
    );
    expect(decisions.filter((x) => x.d.allowed)).toHaveLength(60 - keys.length);
    for (let k = 0; k < keys.length; k++)
      expect(decisions.filter((x) => x.k === k && x.d.allowed).length).toBeLessThanOrEqual(14);
    // The consumer's count and its keys' counts are on one master, in one slot.
    const client = replicas[0]!.client as Cluster;
    const perMaster = await Promise.all(
      client.nodes('master').map((node) => node.keys(`${prefix}{${consumer.id}}*`)),
    );
    const held = perMaster.filter((names) => names.length > 0);
    expect(held).toHaveLength(1);
    const slots = await Promise.all(held[0]!.map((name) => client.cluster('KEYSLOT', name)));
    expect(new Set(slots).size).toBe(1);
    // Beside each count, its lease book and the plan it is decided by (plan-switches.ts).
    expect(held[0]!.filter((name) => !name.endsWith(':lease') && !name.endsWith(':plan'))).toHaveLength(
      1 + keys.length,
    );
    await Promise.all(limiters.map((l) => l.close()));
  });

  it('delivers key changes to every replica', async () => {
    const make = async () => {
      const r = await replica();
      const events = new RedisKeyEvents(r.client, r.subscriber, prefix, logger, metrics);
      const heard: KeyChange[] = [];
      events.subscribe((c) => heard.push(c));
      await events.ready();
      return { events, heard };
    };
    const [a, b, c] = [await make(), await make(), await make()];
    await a.events.publish({ kind: 'key', keyId: 'key_gone' });
    const deadline = Date.now() + 1_000;
    while ((b.heard.length === 0 || c.heard.length === 0) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    expect([a.heard, b.heard, c.heard]).toEqual([
      [{ kind: 'key', keyId: 'key_gone' }],
      [{ kind: 'key', keyId: 'key_gone' }],
      [{ kind: 'key', keyId: 'key_gone' }],
    ]);
  });

  describe('usage', () => {
    let database: TestDatabase;
    let handle: DbHandle;
    beforeAll(async () => {
      database = await createTestDatabase();
      handle = await database.open();
      await migrate(handle);
      const keys = new KeyRepository(handle.db);
      for (const id of ['key_u1', 'key_u2', 'key_u3']) {
        await keys.insert({
          id,
          name: id,
          secretHash: randomBytes(32),
          secretCiphertext: randomBytes(40),
          createdAt: new Date(),
        });
      }
    });
    afterAll(async () => {
      await handle.close();
      await database.drop();
    });

    it('pushes batches whole, shows them pending and flushes them into Postgres', async () => {
      const repository = new UsageRepository(handle.db);
      const rs = await Promise.all([1, 2].map(() => replica()));
      const sinks = rs.map((r) => new RedisUsageSink(r.client, prefix));
      const batch = () => {
        const b = new Map();
        for (const keyId of ['key_u1', 'key_u2', 'key_u3']) {
          const u = emptyKeyUsage();
          u.endpoints.set('/v1/things', {
            requests: 2,
            successful: 1,
            failed: 1,
            totalDurationMs: 7,
            cost: 0,
          });
          u.customers.set('acme', { requests: 2, successful: 1, failed: 1 });
          b.set(keyId, u);
        }
        return b;
      };
      await Promise.all(sinks.map((s) => s.write(batch())));
      const pending = await pendingTotal(
        new RedisPendingUsage(rs[1]!.client, prefix, logger, metrics),
        'key_u2',
      );
      expect(pending?.endpoints.get('/v1/things')).toEqual({
        requests: 4,
        successful: 2,
        failed: 2,
        totalDurationMs: 14,
        cost: 0,
      });

      const flushers = rs.map((r) => new UsageFlusher(r.client, prefix, repository, logger, metrics));
      await Promise.all(flushers.map((f) => f.flush()));
      await flushers[0]!.flush();
      for (const keyId of ['key_u1', 'key_u2', 'key_u3']) {
        const stored = await repository.read(keyId);
        expect(stored.endpoints.get('/v1/things')).toEqual({
          requests: 4,
          successful: 2,
          failed: 2,
          totalDurationMs: 14,
          cost: 0,
        });
        expect(stored.customers.get('acme')).toEqual({ requests: 4, successful: 2, failed: 2 });
      }
      expect(
        await pendingTotal(new RedisPendingUsage(rs[0]!.client, prefix, logger, metrics), 'key_u1'),
      ).toBeUndefined();
    });

    it('routes limiter and usage commands issued in the same tick on one connection', async () => {
      // Auto-pipelining groups a tick's commands per node by their first key; mixing slots must not
      // put a command on the wrong node.
      const r = await replica();
      const limiter = new RedisRateLimiter(r.client, prefix, metrics);
      const sink = new RedisUsageSink(r.client, prefix);
      const pending = new RedisPendingUsage(r.client, prefix, logger, metrics);
      const u = emptyKeyUsage();
      u.endpoints.set('/mixed', { requests: 1, successful: 1, failed: 0, totalDurationMs: 1, cost: 0 });
      const now = Date.now();
      const results = await Promise.all([
        ...Array.from({ length: 30 }, (_, i) =>
          limiter.consume(keyOnly(`key_m${i}`, plan({ limit: 1, period: 'hour' })), 1, now),
        ),
        sink.write(new Map([['key_u1', u]])),
        pending.pending('key_u1'),
      ]);
      expect(results.slice(0, 30).every((d) => d !== undefined && 'allowed' in d && d.allowed)).toBe(true);
      expect((await pendingTotal(pending, 'key_u1'))?.endpoints.get('/mixed')?.requests).toBe(1);
    });
  });
});
