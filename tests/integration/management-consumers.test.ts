/**
 * Consumers (docs/guides/consumers.md) through the management API in process, over the embedded SQLite store
 * and a real Postgres: every operation and the refusals it documents, keys joining and leaving a
 * consumer, plans held by consumers, the audit trail of each change, and what a replica's key cache
 * learns of each. Every response is checked against the OpenAPI document.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request, { type Response } from 'supertest';
import type { KeyCache, ResolvedKey } from '../../src/keys/key-cache.js';
import type { Scope } from '../../src/plans/subject.js';
import type { KeyChange } from '../../src/keys/key-events.js';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import { migrate } from '../../src/store/migrate.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementWithKeyCache, STORAGES, type Storage } from '../helpers/management-storage.js';
import { plan } from '../helpers/plans.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
/** Saturday 2026-11-21 14:23:02.400 UTC. */
const START = Date.UTC(2026, 10, 21, 14, 23, 2, 400);
const CONSUMERS = '/tollgate/consumers';
const CONSUMER = '/tollgate/consumers/{consumerId}';
const KEY = '/consumer-api-key/{consumerApiKeyId}';
const PLAN = '/rate-limit/{rateLimitId}';
const CONSUMER_ID = /^con_[A-Za-z0-9_-]{22}$/;
/** Well formed, but no consumer has it. */
const UNKNOWN_CONSUMER = 'con_' + 'Z'.repeat(22);

type Method = 'get' | 'post' | 'patch' | 'delete';

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

function documented(method: Method, template: string, res: Response): Response {
  expect(checker.problems(method, template, res)).toEqual([]);
  return res;
}

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z';

function expectError(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ code, error: expect.any(String) });
}

/** The usage of a consumer whose keys did nothing yet. */
const NO_USAGE = {
  totalRequests: 0,
  successfulRequests: 0,
  failedRequests: 0,
  cost: 0,
  unsettled: 0,
  endpoints: [],
  usageByCustomer: [],
};

/** The plan a resolved key is charged to for `scope` (its own, or its consumer's), as the limiter gets it. */
const planOf = (key: ResolvedKey | undefined, scope: Scope) =>
  key?.subjects?.find((subject) => subject.scope === scope)?.plan;

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('consumers on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let limiter: MemoryRateLimiter;
  let cache: KeyCache;
  let now = START;
  let announced: KeyChange[] = [];

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    limiter = new MemoryRateLimiter();
    ({ app, cache, announced } = managementWithKeyCache(storage.handle.db, limiter, ROOT_TOKEN, () => now));
  }, 60_000);

  afterAll(async () => {
    await limiter.close();
    await storage.dispose();
  });

  const call = (method: Method, path: string, body?: unknown) => {
    const req = request(app)[method](path).set(AUTH);
    return body === undefined ? req : req.send(body as object);
  };
  /** A JSON body sent as written (an object literal would put integer-like names first). */
  const callWith = (method: 'post' | 'patch', path: string, text: string) =>
    request(app)[method](path).set(AUTH).set('Content-Type', 'application/json').send(text);
  const suffix = () => randomBytes(5).toString('hex');
  /** The actions recorded for a target, oldest first. */
  const trail = async (targetId: string) =>
    (await call('get', `/tollgate/audit-log?targetId=${targetId}`)).body.auditLog.reverse() as {
      action: string;
      target: { type: string };
      changes: { before: unknown; after: unknown };
    }[];

  async function createPlan(limit = 10, period = 'minute'): Promise<string> {
    const rateLimitId = `plan-${suffix()}`;
    expect((await call('post', '/rate-limit/create', { rateLimitId, limit, period })).status).toBe(201);
    return rateLimitId;
  }
  async function createConsumer(
    body: Record<string, unknown> = {},
  ): Promise<Record<string, unknown> & { consumerId: string }> {
    const res = documented('post', CONSUMERS, await call('post', CONSUMERS, { name: 'acme', ...body }));
    expect(res.status).toBe(201);
    return res.body;
  }
  async function createKey(
    body: Record<string, unknown> = {},
  ): Promise<{ id: string; secret: string; consumerId: string | null }> {
    const res = documented(
      'post',
      '/consumer-api-key/create',
      await call('post', '/consumer-api-key/create', { name: 'k', ...body }),
    );
    expect(res.status).toBe(201);
    return res.body;
  }

  describe('create', () => {
    it('answers 201 with the consumer, a Location, credits null and no keys, shows it again and records it', async () => {
      const rateLimitId = await createPlan(600, 'minute');
      const externalId = `acct-${suffix()}`;
      // Members in an order JavaScript would change: returned as written.
      const res = documented(
        'post',
        CONSUMERS,
        await callWith(
          'post',
          CONSUMERS,
          `{"name": "Acme Corp", "externalId": "${externalId}", "metadata": {"b": 1, "2": "two", "a": {"1": true}}, "rateLimitId": "${rateLimitId}"}`,
        ),
      );
      expect(res.status).toBe(201);
      const consumerId = res.body.consumerId as string;
      expect(consumerId).toMatch(CONSUMER_ID);
      expect(res.headers.location).toBe(`/tollgate/consumers/${consumerId}`);
      const expected = {
        consumerId,
        name: 'Acme Corp',
        externalId,
        metadata: { b: 1, '2': 'two', a: { '1': true } },
        rateLimitId,
        keyCount: 0,
        credits: null,
        createdAt: '2026-11-21T14:23:02Z',
        lastUpdated: '2026-11-21T14:23:02Z',
      };
      expect(res.body).toEqual(expected);
      expect(res.text).toContain('"metadata":{"b":1,"2":"two","a":{"1":true}}');

      const detail = documented('get', CONSUMER, await call('get', `/tollgate/consumers/${consumerId}`));
      expect(detail.body).toEqual({
        ...expected,
        usage: {
          ...NO_USAGE,
          rateLimits: {
            limit: 600,
            remaining: 600,
            resetTime: '2026-11-21T14:24:00Z',
            limits: [
              {
                name: 'consumer.minute',
                limit: 600,
                period: 'minute',
                remaining: 600,
                resetTime: '2026-11-21T14:24:00Z',
                scope: 'consumer',
                per: 'key',
              },
            ],
          },
        },
      });
      expect(detail.text).toContain('"metadata":{"b":1,"2":"two","a":{"1":true}}');

      const entries = await trail(consumerId);
      expect(entries).toEqual([
        expect.objectContaining({
          action: 'consumer.create',
          target: { type: 'consumer', id: consumerId },
          changes: {
            before: null,
            after: {
              name: 'Acme Corp',
              externalId,
              metadata: { b: 1, '2': 'two', a: { '1': true } },
              rateLimitId,
            },
          },
        }),
      ]);
    });

    it('defaults to no owner, {} and no plan', async () => {
      const consumer = await createConsumer({ name: 'plain' });
      expect(consumer).toMatchObject({
        name: 'plain',
        externalId: null,
        metadata: {},
        rateLimitId: null,
        keyCount: 0,
        credits: null,
      });
      expect(
        documented('get', CONSUMER, await call('get', `/tollgate/consumers/${consumer.consumerId}`)).body
          .usage,
      ).toEqual({ ...NO_USAGE, rateLimits: null });
    });

    it('refuses bad input naming each field, and stores nothing of it, an unknown plan or a taken externalId (naming it)', async () => {
      const before = (await call('get', `${CONSUMERS}?limit=1000`)).body.consumers.length;
      const invalid = documented(
        'post',
        CONSUMERS,
        await call('post', CONSUMERS, {
          name: '',
          externalId: '',
          metadata: [1],
          rateLimitId: 'no spaces',
          credits: { remaining: 5, refill: { amount: 5, interval: 'month', dayOfMonth: 32 } },
        }),
      );
      expect([...new Set(invalid.body.details.map((d: { field: string }) => d.field))].sort()).toEqual([
        'credits',
        'credits.refill',
        'credits.refill.dayOfMonth',
        'externalId',
        'metadata',
        'name',
        'rateLimitId',
      ]);
      expect(documented('post', CONSUMERS, await call('post', CONSUMERS, {})).body.details).toEqual([
        { field: 'name', message: 'is required' },
      ]);
      expect(
        documented(
          'post',
          CONSUMERS,
          await call('post', CONSUMERS, { name: 'big', metadata: { blob: 'x'.repeat(9_000) } }),
        ).body.details,
      ).toEqual([{ field: 'metadata', message: 'must be at most 8192 bytes as JSON' }]);

      // Refused (its table in src/management/resources/consumers proves how): stores nothing.
      await call('post', CONSUMERS, { name: 'n', rateLimitId: 'no-such-plan' });

      const externalId = `acct-${suffix()}`;
      await createConsumer({ externalId });
      const taken = await call('post', CONSUMERS, { name: 'again', externalId });
      expect(taken.body.error).toContain(externalId);
      expect((await call('get', `${CONSUMERS}?limit=1000`)).body.consumers.length).toBe(before + 1);
    });
  });

  describe('list', () => {
    it('pages oldest first with nextCursor only while more remain, filtered by externalId, namePrefix and rateLimitId', async () => {
      const prefix = `page-${suffix()}-`;
      const rateLimitId = await createPlan();
      const made = [];
      for (let i = 0; i < 3; i++) {
        now += 1_000;
        made.push(
          await createConsumer({
            name: `${prefix}${i}`,
            externalId: `${prefix}ext-${i}`,
            ...(i > 0 && { rateLimitId }),
          }),
        );
      }
      const ids = made.map((c) => c.consumerId);

      const first = documented(
        'get',
        CONSUMERS,
        await call('get', `${CONSUMERS}?namePrefix=${prefix}&limit=2`),
      );
      expect(first.body.consumers.map((c: { consumerId: string }) => c.consumerId)).toEqual(ids.slice(0, 2));
      expect(first.body.consumers[0]).toEqual(made[0]);
      const second = documented(
        'get',
        CONSUMERS,
        await call('get', `${CONSUMERS}?namePrefix=${prefix}&limit=2&cursor=${first.body.nextCursor}`),
      );
      expect(second.body).toEqual({ consumers: [made[2]] });

      const byExternalId = documented(
        'get',
        CONSUMERS,
        await call('get', `${CONSUMERS}?externalId=${prefix}ext-1`),
      );
      expect(byExternalId.body).toEqual({ consumers: [made[1]] });
      const byPlan = documented(
        'get',
        CONSUMERS,
        await call('get', `${CONSUMERS}?rateLimitId=${rateLimitId}`),
      );
      expect(byPlan.body.consumers.map((c: { consumerId: string }) => c.consumerId)).toEqual(ids.slice(1));
      expect(
        documented('get', CONSUMERS, await call('get', `${CONSUMERS}?namePrefix=${prefix}x`)).body,
      ).toEqual({ consumers: [] });
    });

    it('finds consumers by any part of their name or external id, in any case, with search', async () => {
      const tag = suffix().toLowerCase();
      // A second apart: the list is oldest first.
      now += 1_000;
      const globex = await createConsumer({
        name: `Globex ${tag} Industries`,
        externalId: `cus_GLOBEX_${tag}`,
      });
      now += 1_000;
      const trotters = await createConsumer({ name: `globe trotters ${tag}` });
      now += 1_000;
      const initech = await createConsumer({ name: `Initech ${tag}`, externalId: `acct_${tag}_INI` });
      const found = async (text: string) =>
        (
          documented('get', CONSUMERS, await call('get', `${CONSUMERS}?search=${encodeURIComponent(text)}`))
            .body.consumers as { consumerId: string; name: string }[]
        )
          .filter((c) => c.name.includes(tag))
          .map((c) => c.consumerId);
      expect(await found(`GLOBE`)).toEqual([globex.consumerId, trotters.consumerId]);
      expect(await found(`${tag.toUpperCase()} industries`)).toEqual([globex.consumerId]);
      expect(await found(`globex_${tag}`)).toEqual([globex.consumerId]);
      expect(await found(`_ini`)).toEqual([initech.consumerId]);
      expect(await found(`%`)).toEqual([]);
    });
  });

  describe('detail', () => {
    it("shows where the consumer's shared limits stand, from its own count", async () => {
      const rateLimitId = await createPlan(5, 'hour');
      const consumer = await createConsumer({ rateLimitId });
      // The consumer's count is its own, apart from any key's: the limiter's subject is the consumer id.
      for (let i = 0; i < 2; i++)
        await limiter.consume(
          [{ scope: 'consumer', id: consumer.consumerId, plan: plan({ limit: 5, period: 'hour' }) }],
          1,
          now,
        );
      const detail = documented(
        'get',
        CONSUMER,
        await call('get', `/tollgate/consumers/${consumer.consumerId}`),
      );
      expect(detail.body.usage.rateLimits).toEqual({
        limit: 5,
        remaining: 3,
        resetTime: '2026-11-21T15:00:00Z',
        limits: [
          {
            name: 'consumer.hour',
            limit: 5,
            period: 'hour',
            remaining: 3,
            resetTime: '2026-11-21T15:00:00Z',
            scope: 'consumer',
            per: 'key',
          },
        ],
      });
    });
  });

  describe('change', () => {
    it('changes name, externalId, metadata and plan; null clears them; each change is recorded and announced', async () => {
      const [gold, silver] = [await createPlan(100), await createPlan(50)];
      const consumer = await createConsumer({ externalId: `acct-${suffix()}`, rateLimitId: gold });
      const id = consumer.consumerId;
      const path = `/tollgate/consumers/${id}`;
      announced.length = 0;

      now += 60_000;
      const changed = documented(
        'patch',
        CONSUMER,
        await call('patch', path, {
          name: 'Acme Ltd',
          externalId: 'acct-renamed-' + suffix(),
          metadata: { z: 1, a: 2 },
          rateLimitId: silver,
        }),
      );
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({
        consumerId: id,
        name: 'Acme Ltd',
        metadata: { z: 1, a: 2 },
        rateLimitId: silver,
        createdAt: consumer.createdAt,
        lastUpdated: iso(now),
      });
      expect(changed.text).toContain('"metadata":{"z":1,"a":2}');
      expect(documented('get', CONSUMER, await call('get', path)).body.usage.rateLimits.limit).toBe(50);
      expect(announced).toEqual([{ kind: 'consumer', consumerId: id }]);

      // The same values again change nothing: no entry, no announcement, lastUpdated stays.
      now += 60_000;
      const same = documented(
        'patch',
        CONSUMER,
        await call('patch', path, { name: 'Acme Ltd', rateLimitId: silver }),
      );
      expect(same.body).toEqual(changed.body);
      expect(announced).toHaveLength(1);

      const cleared = documented(
        'patch',
        CONSUMER,
        await call('patch', path, { externalId: null, metadata: null, rateLimitId: null }),
      );
      expect(cleared.body).toMatchObject({
        externalId: null,
        metadata: {},
        rateLimitId: null,
        lastUpdated: iso(now),
      });
      expect(documented('get', CONSUMER, await call('get', path)).body.usage).toEqual({
        ...NO_USAGE,
        rateLimits: null,
      });
      expect(announced).toHaveLength(2);

      const entries = await trail(id);
      expect(entries.map((e) => e.action)).toEqual(['consumer.create', 'consumer.update', 'consumer.update']);
      expect(entries[1]!.changes).toEqual({
        before: { name: 'acme', externalId: consumer.externalId, metadata: {}, rateLimitId: gold },
        after: {
          name: 'Acme Ltd',
          externalId: changed.body.externalId,
          metadata: { z: 1, a: 2 },
          rateLimitId: silver,
        },
      });
    });

    it('refuses an empty body and credits that are no balance with 400, and changes nothing for them, a taken externalId or an unknown plan', async () => {
      const taken = `acct-${suffix()}`;
      await createConsumer({ externalId: taken });
      const consumer = await createConsumer();
      const path = `/tollgate/consumers/${consumer.consumerId}`;

      // Refused (its table in src/management/resources/consumers proves how): changes nothing.
      await call('patch', path, { externalId: taken });
      await call('patch', path, { rateLimitId: 'no-such-plan' });
      expectError(documented('patch', CONSUMER, await call('patch', path, {})), 400, 'validation_failed');
      expectError(
        documented('patch', CONSUMER, await call('patch', path, { credits: 10 })),
        400,
        'validation_failed',
      );

      expect((await call('get', path)).body).toMatchObject({
        externalId: null,
        lastUpdated: consumer.lastUpdated,
      });
      expect((await trail(consumer.consumerId)).map((e) => e.action)).toEqual(['consumer.create']);
    });
  });

  describe('keys of a consumer', () => {
    it('gives a key a consumer at creation, moves it by PATCH, lists by consumerId, and counts the keys of each', async () => {
      const [a, b] = [await createConsumer({ name: 'a' }), await createConsumer({ name: 'b' })];
      const key = await createKey({ consumerId: a.consumerId });
      expect(key.consumerId).toBe(a.consumerId);
      now += 1_000;
      const other = await createKey({ consumerId: a.consumerId });
      expect(documented('get', KEY, await call('get', `/consumer-api-key/${key.id}`)).body.consumerId).toBe(
        a.consumerId,
      );
      expect((await call('get', `/tollgate/consumers/${a.consumerId}`)).body.keyCount).toBe(2);

      const listed = documented(
        'get',
        '/consumer-api-key',
        await call('get', `/consumer-api-key?consumerId=${a.consumerId}`),
      );
      expect(listed.body.apiKeys.map((k: { consumerApiKeyId: string }) => k.consumerApiKeyId)).toEqual([
        key.id,
        other.id,
      ]);
      expect(listed.body.apiKeys.every((k: { consumerId: string }) => k.consumerId === a.consumerId)).toBe(
        true,
      );

      now += 1_000;
      const moved = documented(
        'patch',
        KEY,
        await call('patch', `/consumer-api-key/${key.id}`, { consumerId: b.consumerId }),
      );
      expect(moved.body.consumerId).toBe(b.consumerId);
      expect(announced.at(-1)).toEqual({ kind: 'key', keyId: key.id });
      expect(
        (await call('get', `/consumer-api-key?consumerId=${b.consumerId}`)).body.apiKeys.map(
          (k: { consumerApiKeyId: string }) => k.consumerApiKeyId,
        ),
      ).toEqual([key.id]);
      expect((await call('get', `/tollgate/consumers/${a.consumerId}`)).body.keyCount).toBe(1);

      const alone = documented(
        'patch',
        KEY,
        await call('patch', `/consumer-api-key/${key.id}`, { consumerId: null }),
      );
      expect(alone.body.consumerId).toBeNull();
      expect((await call('get', `/tollgate/consumers/${b.consumerId}`)).body.keyCount).toBe(0);

      const entries = await trail(key.id);
      expect(entries.map((e) => e.action)).toEqual(['key.create', 'key.update', 'key.update']);
      expect(entries[0]!.changes.after).toMatchObject({ consumerId: a.consumerId });
      expect(entries[1]!.changes).toMatchObject({
        before: { consumerId: a.consumerId },
        after: { consumerId: b.consumerId },
      });
      expect(entries[2]!.changes).toMatchObject({
        before: { consumerId: b.consumerId },
        after: { consumerId: null },
      });
    });

    it('names a malformed consumerId, and stores nothing of it or of an unknown one, on create and PATCH', async () => {
      const before = (await call('get', '/consumer-api-key?limit=1000')).body.apiKeys.length;
      // Refused (its table in src/management/resources/keys proves how): stores nothing.
      await call('post', '/consumer-api-key/create', { name: 'orphan', consumerId: UNKNOWN_CONSUMER });
      const malformed = documented(
        'post',
        '/consumer-api-key/create',
        await call('post', '/consumer-api-key/create', { name: 'orphan', consumerId: 'acme' }),
      );
      expect(new Set(malformed.body.details.map((d: { field: string }) => d.field))).toEqual(
        new Set(['consumerId']),
      );
      expect((await call('get', '/consumer-api-key?limit=1000')).body.apiKeys.length).toBe(before);

      const key = await createKey();
      await call('patch', `/consumer-api-key/${key.id}`, { consumerId: UNKNOWN_CONSUMER });
      expect((await call('get', `/consumer-api-key/${key.id}`)).body.consumerId).toBeNull();
    });

    it("gives the key cache the key's consumer and the consumer's plan, and a new consumer plan reaches it at once", async () => {
      const rateLimitId = await createPlan(600, 'minute');
      const consumer = await createConsumer({ rateLimitId });
      // The key has a plan of its own besides its consumer's.
      const key = await createKey({
        consumerId: consumer.consumerId,
        rateLimitId: await createPlan(5, 'second'),
      });
      const resolved = await cache.resolve(key.secret);
      expect(resolved).toMatchObject({
        id: key.id,
        consumerId: consumer.consumerId,
        subjects: [
          { scope: 'key', id: key.id, plan: plan({ limit: 5, period: 'second' }) },
          { scope: 'consumer', id: consumer.consumerId, plan: plan({ limit: 600, period: 'minute' }) },
        ],
      });

      const bigger = await createPlan(6_000, 'hour');
      documented(
        'patch',
        CONSUMER,
        await call('patch', `/tollgate/consumers/${consumer.consumerId}`, { rateLimitId: bigger }),
      );
      expect(planOf(await cache.resolve(key.secret), 'consumer')).toEqual(
        plan({ limit: 6_000, period: 'hour' }),
      );
      // A change of the consumer's plan itself reaches it too.
      documented('patch', PLAN, await call('patch', `/rate-limit/${bigger}`, { limit: 7_000 }));
      expect(planOf(await cache.resolve(key.secret), 'consumer')).toEqual(
        plan({ limit: 7_000, period: 'hour' }),
      );
      documented(
        'patch',
        CONSUMER,
        await call('patch', `/tollgate/consumers/${consumer.consumerId}`, { rateLimitId: null }),
      );
      expect(planOf(await cache.resolve(key.secret), 'consumer')?.limits).toEqual([]);
    });
  });

  describe('delete', () => {
    it('counts the keys of a consumer it refuses to delete; with force detaches them, which keep working alone', async () => {
      const rateLimitId = await createPlan();
      const consumer = await createConsumer({ rateLimitId });
      const path = `/tollgate/consumers/${consumer.consumerId}`;
      const keys = [
        await createKey({ consumerId: consumer.consumerId }),
        await createKey({ consumerId: consumer.consumerId, rateLimitId }),
      ];
      for (const key of keys) expect((await cache.resolve(key.secret))?.consumerId).toBe(consumer.consumerId);

      // Refused without force (its table in src/management/resources/consumers proves how), counting both.
      expect((await call('delete', path)).body.keyCount).toBe(2);
      expect((await call('get', path)).status).toBe(200);

      now += 1_000;
      const deleted = documented('delete', CONSUMER, await call('delete', `${path}?force=true`));
      expect(deleted.body).toEqual({
        consumerId: consumer.consumerId,
        message: expect.stringContaining('has been deleted'),
      });
      expect(announced.at(-1)).toEqual({ kind: 'consumer', consumerId: consumer.consumerId });
      expectError(documented('get', CONSUMER, await call('get', path)), 404, 'consumer_not_found');

      for (const key of keys) {
        const detail = documented('get', KEY, await call('get', `/consumer-api-key/${key.id}`));
        expect(detail.body).toMatchObject({ consumerId: null, lastUpdated: iso(now) });
        // Still a working key, now without a consumer; its own plan stays.
        expect(await cache.resolve(key.secret)).toMatchObject({
          id: key.id,
          enabled: true,
          consumerId: undefined,
        });
        const entries = await trail(key.id);
        expect(entries.at(-1)).toMatchObject({
          action: 'key.detach_consumer',
          changes: { before: { consumerId: consumer.consumerId }, after: { consumerId: null } },
        });
      }
      expect(planOf(await cache.resolve(keys[1]!.secret), 'key')).toEqual(
        plan({ limit: 10, period: 'minute' }),
      );
      const entries = await trail(consumer.consumerId);
      expect(entries.map((e) => e.action)).toEqual(['consumer.create', 'consumer.delete']);
      expect(entries[1]!.changes).toEqual({
        before: { name: 'acme', externalId: null, metadata: {}, rateLimitId, keyCount: 2 },
        after: null,
      });
    });

    it('deletes a consumer without keys with no force, then answers 404 for it, and frees its externalId', async () => {
      const externalId = `acct-${suffix()}`;
      const consumer = await createConsumer({ externalId });
      expect(
        documented('delete', CONSUMER, await call('delete', `/tollgate/consumers/${consumer.consumerId}`))
          .status,
      ).toBe(200);
      expectError(
        documented('delete', CONSUMER, await call('delete', `/tollgate/consumers/${consumer.consumerId}`)),
        404,
        'consumer_not_found',
      );
      await createConsumer({ externalId });
    });
  });

  describe('plans held by consumers', () => {
    it('counts its consumers, refuses to delete a plan a consumer holds unless forced, and then unbinds and records each', async () => {
      const rateLimitId = await createPlan();
      const holders = [await createConsumer({ rateLimitId }), await createConsumer({ rateLimitId })];
      const shown = documented('get', PLAN, await call('get', `/rate-limit/${rateLimitId}`));
      expect(shown.body).toMatchObject({ keyCount: 0, consumerCount: 2 });
      const listed = documented('get', '/rate-limit', await call('get', '/rate-limit?limit=1000'));
      expect(
        listed.body.rateLimits.find((p: { rateLimitId: string }) => p.rateLimitId === rateLimitId),
      ).toMatchObject({ consumerCount: 2 });

      const refused = documented('delete', PLAN, await call('delete', `/rate-limit/${rateLimitId}`));
      expectError(refused, 409, 'rate_limit_in_use');
      expect(refused.body).toMatchObject({ keyCount: 0, consumerCount: 2 });

      now += 1_000;
      announced.length = 0;
      const deleted = documented(
        'delete',
        PLAN,
        await call('delete', `/rate-limit/${rateLimitId}?force=true`),
      );
      expect(deleted.body.message).toContain('(unbound from 2 consumer(s))');
      expect(announced).toEqual([{ kind: 'plan', rateLimitId }]);
      for (const holder of holders) {
        const detail = documented(
          'get',
          CONSUMER,
          await call('get', `/tollgate/consumers/${holder.consumerId}`),
        );
        expect(detail.body).toMatchObject({ rateLimitId: null, usage: { rateLimits: null } });
        expect(detail.body.lastUpdated).not.toBe(holder.lastUpdated);
        expect((await trail(holder.consumerId)).at(-1)).toMatchObject({
          action: 'consumer.remove_plan',
          changes: { before: { rateLimitId }, after: { rateLimitId: null } },
        });
      }
      expect((await trail(rateLimitId)).at(-1)).toMatchObject({
        action: 'plan.delete',
        changes: { before: { keyCount: 0, consumerCount: 2 }, after: null },
      });
    });
  });
});
