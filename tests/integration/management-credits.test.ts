/**
 * Credits (docs/guides/credits.md) through the management API in process, over the embedded SQLite store
 * with in-process counters and over a real Postgres with Redis counters, as each mode runs: balances
 * set on create and PATCH, shown as the limiter holds them, topped up and set through
 * `/tollgate/credits`, each change audited, announced and in force for the next request a replica
 * decides (even one whose key cache still holds the record before the change), and bad input refused
 * naming the field. Requests are charged as the proxy charges them: the subjects a replica's key cache
 * resolves, through the same limiter. Every response is checked against the OpenAPI document.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request, { type Response } from 'supertest';
import type { KeyCache } from '../../src/keys/key-cache.js';
import type { KeyChange } from '../../src/keys/key-events.js';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { RateLimiter } from '../../src/limits/rate-limiter.js';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import type { Subject } from '../../src/plans/subject.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { migrate } from '../../src/store/migrate.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementWithKeyCache, STORAGES, type Storage } from '../helpers/management-storage.js';
import { COUNTING_REDIS, REDIS_URL, testKeyPrefix } from '../helpers/services.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
/** Saturday 2026-11-21 14:23:02.400 UTC. */
const START = Date.UTC(2026, 10, 21, 14, 23, 2, 400);
const CREDITS = '/tollgate/credits';
const KEY = '/consumer-api-key/{consumerApiKeyId}';
const CONSUMER = '/tollgate/consumers/{consumerId}';
const UNKNOWN_CONSUMER = 'con_' + 'Z'.repeat(22);
const MAX = Number.MAX_SAFE_INTEGER;

type Method = 'get' | 'post' | 'patch' | 'delete';

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

function documented(method: Method, template: string, res: Response): Response {
  expect(checker.problems(method, template, res)).toEqual([]);
  return res;
}

function expectInvalid(res: Response, fields: string[]): void {
  expect(res.status).toBe(400);
  expect(res.body.code).toBe('validation_failed');
  expect(res.body.details.map((d: { field: string }) => d.field)).toEqual(expect.arrayContaining(fields));
}

/** Each storage with the counters production pairs it with. */
const MODES: Record<keyof typeof STORAGES, (clock: () => number) => Promise<RateLimiter>> = {
  embedded: () => Promise.resolve(new MemoryRateLimiter()),
  async postgres(clock) {
    const redis = connectRedis(
      { redisUrl: REDIS_URL, redisClusterNodes: undefined },
      createLogger('silent'),
      COUNTING_REDIS,
    );
    connections.push(redis);
    const limiter = new RedisRateLimiter(redis.client, testKeyPrefix(), new Metrics(), {
      subscriber: redis.subscriber,
      clock,
    });
    await limiter.ready();
    return limiter;
  },
};
const connections: RedisConnections[] = [];
afterAll(() => Promise.all(connections.map((c) => c.close())));

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('credits on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let limiter: RateLimiter;
  let cache: KeyCache;
  let now = START;
  let announced: KeyChange[] = [];

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    limiter = await MODES[kind](() => now);
    ({ app, cache, announced } = managementWithKeyCache(storage.handle.db, limiter, ROOT_TOKEN, () => now));
  }, 60_000);

  afterAll(async () => {
    await limiter.close();
    await storage.dispose();
  });

  const call = (method: Method, path: string, body?: unknown) => {
    const req = request(app)[method](path).set('Authorization', `Bearer ${ROOT_TOKEN}`);
    return body === undefined ? req : req.send(body as object);
  };
  const trail = async (targetId: string) =>
    (await call('get', `/tollgate/audit-log?targetId=${targetId}`)).body.auditLog.reverse() as {
      action: string;
      changes: { before: Record<string, unknown> | null; after: Record<string, unknown> | null };
    }[];

  async function createKey(
    body: Record<string, unknown> = {},
  ): Promise<{ id: string; secret: string; credits: unknown }> {
    const res = documented(
      'post',
      '/consumer-api-key/create',
      await call('post', '/consumer-api-key/create', { name: 'k', ...body }),
    );
    expect(res.status).toBe(201);
    return res.body;
  }
  async function createConsumer(
    body: Record<string, unknown> = {},
  ): Promise<{ consumerId: string; credits: unknown }> {
    const res = documented(
      'post',
      '/tollgate/consumers',
      await call('post', '/tollgate/consumers', { name: 'acme', ...body }),
    );
    expect(res.status).toBe(201);
    return res.body;
  }
  /** The subjects a replica charges a key's requests to, as its key cache holds them now. */
  const subjectsOf = async (secret: string) => (await cache.resolve(secret))!.subjects!;
  /** `n` requests of `cost` decided against `subjects`: how many were admitted. */
  async function spend(subjects: readonly Subject[], n: number, cost = 1): Promise<number> {
    let admitted = 0;
    for (let i = 0; i < n; i++) if ((await limiter.consume(subjects, cost, now)).allowed) admitted++;
    return admitted;
  }
  const keyCredits = async (id: string) =>
    documented('get', KEY, await call('get', `/consumer-api-key/${id}`)).body.credits;
  const consumerCredits = async (id: string) =>
    documented('get', CONSUMER, await call('get', `/tollgate/consumers/${id}`)).body.credits;
  const change = async (body: Record<string, unknown>) =>
    documented('post', CREDITS, await call('post', CREDITS, body));

  it('gives keys and consumers a balance on create, shows what the limiter holds of it, and records it', async () => {
    const consumer = await createConsumer({
      credits: { remaining: 1_000, refill: { amount: 1_000, interval: 'month', dayOfMonth: 15 } },
    });
    expect(consumer).toMatchObject({
      credits: {
        remaining: 1_000,
        refill: { amount: 1_000, interval: 'month', dayOfMonth: 15 },
        lowAt: null,
      },
    });
    const key = await createKey({
      consumerId: consumer.consumerId,
      credits: { remaining: 50, refill: { amount: 50, interval: 'day' }, lowAt: 5 },
    });
    expect(key).toMatchObject({
      credits: { remaining: 50, refill: { amount: 50, interval: 'day' }, lowAt: 5 },
    });
    // A monthly refill that names no day comes on the 1st.
    expect(
      (await createKey({ credits: { remaining: 1, refill: { amount: 2, interval: 'month' } } })).credits,
    ).toEqual({ remaining: 1, refill: { amount: 2, interval: 'month', dayOfMonth: 1 }, lowAt: null });
    expect((await createKey()).credits).toBeNull();

    // Requests of the key spend both balances; every answer shows what each holds now.
    expect(await spend(await subjectsOf(key.secret), 3, 5)).toBe(3);
    expect(await keyCredits(key.id)).toEqual({
      remaining: 35,
      refill: { amount: 50, interval: 'day' },
      lowAt: 5,
    });
    expect((await consumerCredits(consumer.consumerId)).remaining).toBe(985);
    const listed = documented(
      'get',
      '/tollgate/consumers',
      await call('get', '/tollgate/consumers?limit=1000'),
    );
    expect(
      listed.body.consumers.find((c: { consumerId: string }) => c.consumerId === consumer.consumerId).credits,
    ).toMatchObject({ remaining: 985 });
    // Key lists carry no balance (each would cost the limiter a read): the detail does.
    const keys = documented('get', '/consumer-api-key', await call('get', '/consumer-api-key?limit=1000'));
    expect(
      keys.body.apiKeys.find((k: { consumerApiKeyId: string }) => k.consumerApiKeyId === key.id),
    ).not.toHaveProperty('credits');

    const [created] = await trail(key.id);
    expect(created).toMatchObject({
      action: 'key.create',
      changes: {
        before: null,
        after: { credits: { remaining: 50, refill: { amount: 50, interval: 'day' }, lowAt: 5 } },
      },
    });
    expect((await trail(consumer.consumerId))[0]!.changes.after).toMatchObject({
      credits: { remaining: 1_000, refill: { amount: 1_000, interval: 'month', dayOfMonth: 15 } },
    });
  });

  it('sets the balance afresh on PATCH, in force at once wherever the old record is still held; null removes it; each recorded with what it held', async () => {
    const key = await createKey({ credits: { remaining: 10 } });
    const before = await subjectsOf(key.secret);
    expect(await spend(before, 4)).toBe(4);
    announced.length = 0;
    now += 1_000;

    const patched = documented(
      'patch',
      KEY,
      await call('patch', `/consumer-api-key/${key.id}`, {
        credits: { remaining: 20, refill: { amount: 30, interval: 'month', dayOfMonth: 31 } },
      }),
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      credits: { remaining: 20, refill: { amount: 30, interval: 'month', dayOfMonth: 31 }, lowAt: null },
      lastUpdated: new Date(now).toISOString().slice(0, 19) + 'Z',
    });
    expect(announced).toEqual([{ kind: 'key', keyId: key.id }]);
    // A replica that has not heard yet decides with the old record: the new balance holds all the same.
    expect(await spend(before, 25)).toBe(20);
    expect((await keyCredits(key.id)).remaining).toBe(0);
    const [, set] = await trail(key.id);
    expect(set).toMatchObject({
      action: 'key.update',
      changes: {
        before: { credits: { remaining: 6, refill: null, lowAt: null } },
        after: { credits: { remaining: 20, refill: { amount: 30, interval: 'month', dayOfMonth: 31 } } },
      },
    });

    const removed = documented(
      'patch',
      KEY,
      await call('patch', `/consumer-api-key/${key.id}`, { credits: null }),
    );
    expect(removed.body.credits).toBeNull();
    expect((await cache.resolve(key.secret))!.subjects).toBeUndefined();
    expect((await trail(key.id)).at(-1)!.changes).toMatchObject({
      before: { credits: { remaining: 0 } },
      after: { credits: null },
    });
    // Removing what is not there changes nothing: no entry, lastUpdated stays.
    now += 1_000;
    const again = documented(
      'patch',
      KEY,
      await call('patch', `/consumer-api-key/${key.id}`, { credits: null }),
    );
    expect(again.body.lastUpdated).toBe(removed.body.lastUpdated);
    expect(await trail(key.id)).toHaveLength(3);

    // A consumer's, alike.
    const consumer = await createConsumer({ credits: { remaining: 3 } });
    const member = await createKey({ consumerId: consumer.consumerId });
    const stale = await subjectsOf(member.secret);
    expect(await spend(stale, 3)).toBe(3);
    const consumerPatched = documented(
      'patch',
      CONSUMER,
      await call('patch', `/tollgate/consumers/${consumer.consumerId}`, {
        credits: { remaining: 2, lowAt: 1 },
      }),
    );
    expect(consumerPatched.body.credits).toEqual({ remaining: 2, refill: null, lowAt: 1 });
    expect(await spend(stale, 3)).toBe(2);
    expect((await trail(consumer.consumerId)).at(-1)).toMatchObject({
      action: 'consumer.update',
      changes: { before: { credits: { remaining: 0 } }, after: { credits: { remaining: 2, lowAt: 1 } } },
    });
  });

  it('changes only the refill and lowAt on a PATCH without remaining: what was spent stays spent on every replica, and the same PATCH again changes nothing', async () => {
    for (const holder of ['key', 'consumer'] as const) {
      const consumer =
        holder === 'consumer' ? await createConsumer({ credits: { remaining: 100 } }) : undefined;
      const key = await createKey(
        consumer ? { consumerId: consumer.consumerId } : { credits: { remaining: 100 } },
      );
      const [path, template, id] =
        holder === 'key'
          ? [`/consumer-api-key/${key.id}`, KEY, key.id]
          : [`/tollgate/consumers/${consumer!.consumerId}`, CONSUMER, consumer!.consumerId];
      const held = async () => (holder === 'key' ? keyCredits(key.id) : consumerCredits(id));
      const stale = await subjectsOf(key.secret);
      expect(await spend(stale, 30)).toBe(30);
      const entries = (await trail(id)).length;
      const body = { credits: { refill: { amount: 500, interval: 'day' }, lowAt: 20 } };

      const patched = documented('patch', template, await call('patch', path, body));
      expect(patched.status).toBe(200);
      expect(patched.body.credits).toEqual({
        remaining: 70,
        refill: { amount: 500, interval: 'day' },
        lowAt: 20,
      });
      // A replica still holding the record before the change goes on counting the same balance.
      expect(await spend(stale, 80)).toBe(70);
      expect(await spend(await subjectsOf(key.secret), 1)).toBe(0);
      expect((await held()).remaining).toBe(0);
      expect((await trail(id)).at(-1)).toMatchObject({
        action: `${holder}.update`,
        changes: { after: { credits: { refill: { amount: 500, interval: 'day' }, lowAt: 20 } } },
      });

      // Sent again (an apply retried): no change, no entry.
      now += 1_000;
      const again = documented('patch', template, await call('patch', path, body));
      expect(again.body.lastUpdated).toBe(patched.body.lastUpdated);
      expect(await trail(id)).toHaveLength(entries + 1);
      // The new daily refill comes at the next 00:00 UTC, not at the change.
      const changedAt = now;
      now = Math.ceil(changedAt / 86_400_000) * 86_400_000 - 1;
      expect((await held()).remaining).toBe(0);
      now += 1;
      expect((await held()).remaining).toBe(500);
      now = changedAt; // the other tests' day
    }
  });

  it('tops balances up and sets them through /tollgate/credits: atomic, audited, announced, in force for the next request', async () => {
    // A key without a balance gets one, with no refill.
    const key = await createKey();
    announced.length = 0;
    const first = await change({ consumerApiKeyId: key.id, add: 5 });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ consumerApiKeyId: key.id, remaining: 5 });
    expect(await keyCredits(key.id)).toEqual({ remaining: 5, refill: null, lowAt: null });
    expect(announced).toEqual([{ kind: 'key', keyId: key.id }]);
    const subjects = await subjectsOf(key.secret);
    expect(await spend(subjects, 2)).toBe(2);
    // A top-up adds to what it holds now, whatever was spent; in force with the record the replica holds.
    expect((await change({ consumerApiKeyId: key.id, add: 10 })).body).toEqual({
      consumerApiKeyId: key.id,
      remaining: 13,
    });
    expect(await spend(subjects, 14)).toBe(13);

    // A set keeps the refill and lowAt; a top-up of a refilled balance keeps them too.
    const consumer = await createConsumer({
      credits: { remaining: 100, refill: { amount: 100, interval: 'day' }, lowAt: 7 },
    });
    const member = await createKey({ consumerId: consumer.consumerId });
    const memberSubjects = await subjectsOf(member.secret);
    expect(await spend(memberSubjects, 10, 9)).toBe(10);
    expect((await change({ consumerId: consumer.consumerId, set: 4 })).body).toEqual({
      consumerId: consumer.consumerId,
      remaining: 4,
    });
    expect(await consumerCredits(consumer.consumerId)).toEqual({
      remaining: 4,
      refill: { amount: 100, interval: 'day' },
      lowAt: 7,
    });
    expect(await spend(memberSubjects, 1, 5)).toBe(0);
    expect((await change({ consumerId: consumer.consumerId, add: 1 })).body.remaining).toBe(5);
    expect(await spend(memberSubjects, 1, 5)).toBe(1);
    // The refill at 00:00 UTC sets it back to its amount, whatever the top-ups were.
    now = Date.UTC(2026, 10, 22, 0, 0, 1);
    expect((await consumerCredits(consumer.consumerId)).remaining).toBe(100);
    expect((await change({ consumerId: consumer.consumerId, add: 1 })).body.remaining).toBe(101);
    now = START;

    expect((await trail(key.id)).map((e) => e.action)).toEqual([
      'key.create',
      'key.credits_add',
      'key.credits_add',
    ]);
    expect((await trail(key.id)).at(-1)!.changes).toMatchObject({
      before: { credits: { remaining: 3 } },
      after: { credits: { remaining: 13, refill: null } },
    });
    expect((await trail(consumer.consumerId)).map((e) => e.action)).toEqual([
      'consumer.create',
      'consumer.credits_set',
      'consumer.credits_add',
      'consumer.credits_add',
    ]);
    expect((await trail(consumer.consumerId))[1]!.changes).toMatchObject({
      before: { name: 'acme', credits: { remaining: 10 } },
      after: { name: 'acme', credits: { remaining: 4, refill: { amount: 100, interval: 'day' }, lowAt: 7 } },
    });
  });

  it('tops a balance up to exactly 2^53 - 1 units, whatever the period granted before, and counts it exactly after', async () => {
    const key = await createKey({ credits: { remaining: MAX } });
    const subjects = await subjectsOf(key.secret);
    expect(await spend(subjects, 5)).toBe(5);
    expect(await keyCredits(key.id)).toMatchObject({ remaining: MAX - 5 });
    // What remains is what is limited: the period had granted 2^53 - 1 and spent 5.
    const topped = await change({ consumerApiKeyId: key.id, add: 5 });
    expect(topped.status).toBe(200);
    expect(topped.body).toEqual({ consumerApiKeyId: key.id, remaining: MAX });
    const after = await subjectsOf(key.secret);
    for (let left = MAX - 1; left > MAX - 4; left--)
      expect((await limiter.consume(after, 1, now)).balance?.remaining).toBe(left);
    expect(await keyCredits(key.id)).toMatchObject({ remaining: MAX - 3 });
    expect((await change({ consumerApiKeyId: key.id, add: 4 })).body.details).toEqual([
      { field: 'add', message: `would take the balance beyond ${MAX} units` },
    ]);
    expect((await change({ consumerApiKeyId: key.id, add: 3 })).body.remaining).toBe(MAX);
  });

  it('refuses bad input naming the field, changing nothing', async () => {
    const key = await createKey({ credits: { remaining: MAX - 1 } });
    expectInvalid(await change({}), ['consumerApiKeyId', 'add']);
    expect((await change({})).body.details).toEqual([
      { field: 'consumerApiKeyId', message: 'or consumerId is required' },
      { field: 'add', message: 'or set is required' },
    ]);
    expectInvalid(await change({ consumerApiKeyId: key.id, consumerId: UNKNOWN_CONSUMER, add: 1 }), [
      'consumerId',
    ]);
    expectInvalid(await change({ consumerApiKeyId: key.id, add: 1, set: 1 }), ['set']);
    for (const add of [-1, 0, 1.5, MAX + 1, '1'])
      expectInvalid(await change({ consumerApiKeyId: key.id, add }), ['add']);
    for (const set of [-1, 0.5, 2 ** 53, null])
      expectInvalid(await change({ consumerApiKeyId: key.id, set }), ['set']);
    expectInvalid(await change({ consumerId: 'con_short', add: 1 }), ['consumerId']);
    // Beyond 2^53-1 units, a balance could no longer be counted exactly.
    expect((await change({ consumerApiKeyId: key.id, add: 2 })).body.details).toEqual([
      { field: 'add', message: `would take the balance beyond ${MAX} units` },
    ]);

    const refill = (r: Record<string, unknown>) => ({
      credits: { remaining: 1, refill: { amount: 1, ...r } },
    });
    for (const body of [
      refill({ interval: 'month', dayOfMonth: 0 }),
      refill({ interval: 'month', dayOfMonth: 32 }),
      refill({ interval: 'day', dayOfMonth: 3 }),
    ]) {
      expectInvalid(
        documented(
          'post',
          '/consumer-api-key/create',
          await call('post', '/consumer-api-key/create', { name: 'n', ...body }),
        ),
        ['credits.refill.dayOfMonth'],
      );
      expectInvalid(documented('patch', KEY, await call('patch', `/consumer-api-key/${key.id}`, body)), [
        'credits.refill.dayOfMonth',
      ]);
      expectInvalid(
        documented(
          'post',
          '/tollgate/consumers',
          await call('post', '/tollgate/consumers', { name: 'n', ...body }),
        ),
        ['credits.refill.dayOfMonth'],
      );
    }
    expect(
      (
        await call('post', '/consumer-api-key/create', {
          name: 'n',
          ...refill({ interval: 'day', dayOfMonth: 3 }),
        })
      ).body.details,
    ).toEqual([{ field: 'credits.refill.dayOfMonth', message: 'applies to a monthly refill only' }]);
    expectInvalid(await call('post', '/tollgate/consumers', { name: 'n', ...refill({ interval: 'week' }) }), [
      'credits.refill.interval',
    ]);
    for (const remaining of [-1, 2 ** 53, 1.5])
      expectInvalid(await call('patch', `/consumer-api-key/${key.id}`, { credits: { remaining } }), [
        'credits.remaining',
      ]);
    // A create always sets a count; a PATCH without one needs a balance to go on counting.
    expectInvalid(await call('post', '/consumer-api-key/create', { name: 'n', credits: { refill: null } }), [
      'credits.remaining',
    ]);
    const without = await createKey();
    expectInvalid(
      documented(
        'patch',
        KEY,
        await call('patch', `/consumer-api-key/${without.id}`, { credits: { lowAt: 3 } }),
      ),
      ['credits.remaining'],
    );
    expect(await keyCredits(without.id)).toBeNull();

    // Nothing of it was stored or recorded.
    expect((await keyCredits(key.id)).remaining).toBe(MAX - 1);
    expect((await trail(key.id)).map((e) => e.action)).toEqual(['key.create']);
  });
});
