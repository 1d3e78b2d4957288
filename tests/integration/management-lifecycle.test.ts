/**
 * Keys and plans through their whole life (docs/guides/keys.md, docs/guides/plans.md), through the management API in
 * process over embedded PGlite and a real Postgres; every documented response is checked against the
 * OpenAPI document.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request, { type Response } from 'supertest';
import { LocalKeyEvents, type KeyChange } from '../../src/keys/key-events.js';
import { hashSecret } from '../../src/keys/secret.js';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { migrate } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';
import { keyOnly, plan } from '../helpers/plans.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
const START = Date.UTC(2026, 10, 21, 14, 23, 2, 400);
const KEY = '/consumer-api-key/{consumerApiKeyId}';
const PLAN = '/rate-limit/{rateLimitId}';
const ROLL = '/consumer-api-key/{consumerApiKeyId}/roll';
const logLines: string[] = [];
const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

function documented(method: 'get' | 'post' | 'patch' | 'delete', template: string, res: Response): Response {
  expect(checker.problems(method, template, res)).toEqual([]);
  return res;
}

function expectError(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ code, error: expect.any(String) });
}

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'key and plan lifecycle on %s storage',
  (kind) => {
    let storage: Storage;
    let app: Express;
    let keys: KeyRepository;
    let limiter: MemoryRateLimiter;
    let now = START;
    const events: KeyChange[] = [];
    const secrets: string[] = [];

    beforeAll(async () => {
      storage = await STORAGES[kind]();
      await migrate(storage.handle);
      const metrics = new Metrics();
      const usageRepository = new UsageRepository(storage.handle.db);
      const recorder = new UsageRecorder(new DatabaseUsageSink(usageRepository), logger, metrics);
      limiter = new MemoryRateLimiter();
      const keyEvents = new LocalKeyEvents();
      keyEvents.subscribe((change) => events.push(change));
      keys = new KeyRepository(storage.handle.db);
      app = createManagementApp(
        managementDeps(storage.handle.db, {
          usage: new UsageReader(usageRepository, [recorder]),
          limiter,
          keyEvents,
          rootToken: ROOT_TOKEN,
          logger,
          metrics,
          clock: () => now,
        }),
      );
    }, 60_000);

    afterAll(async () => {
      await limiter.close();
      await storage.dispose();
    });

    const send = (method: 'post' | 'patch', path: string, body?: unknown) => {
      const req = request(app)[method](path).set(AUTH);
      return body === undefined ? req : req.send(body as object);
    };
    const get = (path: string) => request(app).get(path).set(AUTH);
    const del = (path: string) => request(app).delete(path).set(AUTH);

    async function createKey(
      body: Record<string, unknown> = {},
    ): Promise<Record<string, unknown> & { id: string; secret: string }> {
      const res = documented(
        'post',
        '/consumer-api-key/create',
        await send('post', '/consumer-api-key/create', { name: 'k', ...body }),
      );
      expect(res.status).toBe(201);
      secrets.push(res.body.secret);
      return res.body;
    }

    async function createPlan(limit = 10, period = 'minute'): Promise<string> {
      const rateLimitId = `plan-${randomBytes(5).toString('hex')}`;
      expect((await send('post', '/rate-limit/create', { rateLimitId, limit, period })).status).toBe(201);
      return rateLimitId;
    }

    describe('create', () => {
      it('takes the lifecycle fields and a plan, and answers with them beside the seed fields', async () => {
        const plan = await createPlan();
        const metadata = { tier: 'gold', seats: 3, nested: { a: [1, 'two'] } };
        const key = await createKey({
          name: 'acme',
          externalId: 'cus_42',
          metadata,
          enabled: false,
          expiresAt: '2027-01-01T00:00:00Z',
          rateLimitId: plan,
        });
        expect(key).toMatchObject({
          name: 'acme',
          externalId: 'cus_42',
          metadata,
          enabled: false,
          expiresAt: '2027-01-01T00:00:00Z',
          rateLimitId: plan,
          lastUsedAt: null,
        });
        const detail = documented('get', KEY, await get(`/consumer-api-key/${key.id}`));
        expect(detail.body).toMatchObject({
          externalId: 'cus_42',
          metadata,
          enabled: false,
          expiresAt: '2027-01-01T00:00:00Z',
          rateLimitId: plan,
          lastUsedAt: null,
        });
        expect(JSON.stringify(detail.body.metadata)).toBe(JSON.stringify(metadata));
      });

      it('returns metadata as given, integer-like names included, at every depth: created, changed, shown and audited', async () => {
        // JavaScript objects put integer-like names first; the caller's order must survive anyway.
        const written =
          '{"b":1,"2":"two","a":{"z":1,"1":2,"m":[{"10":true,"9":null,"x":{"y":0,"0":"zero"}}]},"":"empty","-1":-1.5e3}';
        const asSent = (text: string) =>
          request(app)
            .post('/consumer-api-key/create')
            .set(AUTH)
            .set('Content-Type', 'application/json')
            .send(text);
        const created = documented(
          'post',
          '/consumer-api-key/create',
          await asSent(`{"name": "ordered", "metadata": ${written.replace(/,/g, ', ')}}`),
        );
        expect(created.status).toBe(201);
        secrets.push(created.body.secret);
        // Insignificant whitespace goes; numbers are written as JSON.stringify writes them (-1.5e3 → -1500).
        const expected = written.replace('-1.5e3', '-1500');
        expect(created.text).toContain(`"metadata":${expected}`);
        const detail = documented('get', KEY, await get(`/consumer-api-key/${created.body.id}`));
        expect(detail.text).toContain(`"metadata":${expected}`);

        const changed = '{"9":"nine","8":{"7":7,"b":[3,{"2":2,"1":1}]}}';
        const patched = await request(app)
          .patch(`/consumer-api-key/${created.body.id}`)
          .set(AUTH)
          .set('Content-Type', 'application/json')
          .send(`{"metadata":${changed}}`);
        documented('patch', KEY, patched);
        expect(patched.text).toContain(`"metadata":${changed}`);
        expect((await get(`/consumer-api-key/${created.body.id}`)).text).toContain(`"metadata":${changed}`);

        const audit = await get(`/tollgate/audit-log?targetId=${created.body.id}`);
        documented('get', '/tollgate/audit-log', audit);
        expect(audit.text).toContain(
          `"after":{"name":"ordered","enabled":true,"expiresAt":null,"externalId":null,"metadata":${changed},"rateLimitId":null,"consumerId":null,"allowedRouteIds":null,"allowedOrigins":null,"allowedAddresses":null}`,
        );
        expect(audit.text).toContain(
          `"before":null,"after":{"name":"ordered","enabled":true,"expiresAt":null,"externalId":null,"metadata":${expected},"rateLimitId":null,"consumerId":null,"allowedRouteIds":null,"allowedOrigins":null,"allowedAddresses":null}`,
        );

        // A name written twice keeps its first place and its last value, as JSON.parse reads it.
        const twice = await asSent('{"name":"twice","metadata":{"a":1,"3":3,"a":2}}');
        secrets.push(twice.body.secret);
        expect(twice.text).toContain('"metadata":{"a":2,"3":3}');
      });

      it('creates nothing for an unknown plan', async () => {
        const before = (await get('/consumer-api-key?limit=1000')).body.apiKeys.length;
        // Refused (its table in src/management/resources/keys proves how).
        await send('post', '/consumer-api-key/create', { name: 'x', rateLimitId: 'no-such-plan' });
        expect((await get('/consumer-api-key?limit=1000')).body.apiKeys).toHaveLength(before);
      });

      it.each([
        ['a date that does not exist', { expiresAt: '2026-02-30T00:00:00Z' }, 'expiresAt'],
        ['a fraction of a second', { expiresAt: '2026-11-21T14:23:02.5Z' }, 'expiresAt'],
        ['epoch seconds', { expiresAt: 1_800_000_000 }, 'expiresAt'],
        ['metadata over 8 KiB', { metadata: { big: 'x'.repeat(8 * 1024) } }, 'metadata'],
        ['metadata that is not an object', { metadata: ['not', 'an', 'object'] }, 'metadata'],
        ['an empty externalId', { externalId: '' }, 'externalId'],
        ['enabled as text', { enabled: 'yes' }, 'enabled'],
      ])('refuses %s: 400 naming the field', async (_label, body, field) => {
        const res = documented(
          'post',
          '/consumer-api-key/create',
          await send('post', '/consumer-api-key/create', { name: 'x', ...body }),
        );
        expectError(res, 400, 'validation_failed');
        expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
      });
    });

    describe('PATCH /consumer-api-key/{id}', () => {
      it('changes each field, clears with null, moves lastUpdated and tells the key caches', async () => {
        now = START;
        const key = await createKey({ externalId: 'owner-1', expiresAt: '2030-01-01T00:00:00Z' });
        now = START + 60_000;
        events.length = 0;
        const res = documented(
          'patch',
          KEY,
          await send('patch', `/consumer-api-key/${key.id}`, {
            name: 'renamed',
            enabled: false,
            metadata: { plan: 'pro' },
            externalId: null,
            expiresAt: null,
          }),
        );
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({
          consumerApiKeyId: key.id,
          name: 'renamed',
          secret: key.secret,
          enabled: false,
          metadata: { plan: 'pro' },
          externalId: null,
          expiresAt: null,
          createdAt: '2026-11-21T14:23:02Z',
          lastUpdated: '2026-11-21T14:24:02Z',
        });
        expect(res.body).not.toHaveProperty('usage');
        expect(events).toEqual([{ kind: 'key', keyId: key.id }]);
        const enabled = await send('patch', `/consumer-api-key/${key.id}`, {
          enabled: true,
          expiresAt: '2031-05-06T07:08:09Z',
        });
        expect(enabled.body).toMatchObject({
          enabled: true,
          expiresAt: '2031-05-06T07:08:09Z',
          name: 'renamed',
          metadata: { plan: 'pro' },
        });
        now = START;
      });

      it('answers 400 for an empty or unknown change', async () => {
        const key = await createKey();
        expectError(
          documented('patch', KEY, await send('patch', `/consumer-api-key/${key.id}`, {})),
          400,
          'validation_failed',
        );
        expectError(
          documented('patch', KEY, await send('patch', `/consumer-api-key/${key.id}`, { secret: 'tg_x' })),
          400,
          'validation_failed',
        );
        expectError(
          documented('patch', KEY, await send('patch', `/consumer-api-key/${key.id}`, { name: null })),
          400,
          'validation_failed',
        );
      });
    });

    describe('POST /consumer-api-key/{id}/roll', () => {
      it('gives a new secret; the previous one opens the key until the end of the grace, which the answer names', async () => {
        now = START; // 14:23:02.400
        const key = await createKey();
        events.length = 0;
        const res = documented(
          'post',
          ROLL,
          await send('post', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 3600 }),
        );
        expect(res.status).toBe(200);
        // 14:23:02.400 + 1 h, rounded up to the whole second: the stated instant is the stored end.
        expect(res.body).toEqual({
          consumerApiKeyId: key.id,
          secret: expect.stringMatching(/^tg_/),
          previousSecretExpiresAt: '2026-11-21T15:23:03Z',
        });
        expect(res.body.secret).not.toBe(key.secret);
        secrets.push(res.body.secret);
        expect(events).toEqual([{ kind: 'key', keyId: key.id }]);
        // The detail shows the new secret; both secrets find the same key, the old one with its end.
        expect((await get(`/consumer-api-key/${key.id}`)).body.secret).toBe(res.body.secret);
        expect(await keys.findBySecretHash(hashSecret(res.body.secret))).toMatchObject({
          id: key.id,
          secretValidUntilMs: null,
        });
        expect(await keys.findBySecretHash(hashSecret(key.secret))).toMatchObject({
          id: key.id,
          secretValidUntilMs: Date.UTC(2026, 10, 21, 15, 23, 3),
        });

        // Rolling again ends the earlier grace at once: the first secret opens nothing now. Grace 0 refuses
        // the second at once too; the answer states the instant by which every replica has heard of it
        // (the first whole second at least 500 ms away), never one before the real end.
        const again = await send('post', `/consumer-api-key/${key.id}/roll`);
        expect(again.status).toBe(200);
        expect(again.body.previousSecretExpiresAt).toBe('2026-11-21T14:23:03Z');
        secrets.push(again.body.secret);
        expect(await keys.findBySecretHash(hashSecret(key.secret))).toBeUndefined();
        expect(await keys.findBySecretHash(hashSecret(res.body.secret))).toBeUndefined();
        expect(await keys.findBySecretHash(hashSecret(again.body.secret))).toMatchObject({
          id: key.id,
          secretValidUntilMs: null,
        });
        now = START + 600; // 14:23:03.000 exactly
        const third = await send('post', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 0 });
        secrets.push(third.body.secret);
        expect(third.body.previousSecretExpiresAt).toBe('2026-11-21T14:23:04Z');
        now = START;
      });

      it('answers 400 for a grace outside 0-604800 s', async () => {
        const key = await createKey();
        for (const gracePeriodSeconds of [-1, 604_801, 1.5, '60']) {
          expectError(
            documented(
              'post',
              ROLL,
              await send('post', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds }),
            ),
            400,
            'validation_failed',
          );
        }
        expect(
          (await send('post', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 604_800 })).status,
        ).toBe(200);
      });
    });

    describe('GET /consumer-api-key filters', () => {
      it('filters by plan, state, owner and name prefix, and pages through a filter', async () => {
        const plan = await createPlan();
        const tag = randomBytes(4).toString('hex');
        const made: { id: string }[] = [];
        for (let i = 0; i < 5; i++) {
          now = START + 1000 * (i + 1);
          made.push(
            await createKey({
              name: `${tag}-${i}`,
              enabled: i % 2 === 0,
              externalId: i < 2 ? `owner-${tag}` : null,
              rateLimitId: i >= 3 ? plan : null,
            }),
          );
        }
        now = START;
        const ids = async (query: string) => {
          const res = documented('get', '/consumer-api-key', await get(`/consumer-api-key?${query}`));
          expect(res.status).toBe(200);
          return res.body.apiKeys.map((k: { consumerApiKeyId: string }) => k.consumerApiKeyId);
        };
        const id = (i: number) => made[i]!.id;
        expect(await ids(`namePrefix=${tag}`)).toEqual([0, 1, 2, 3, 4].map(id));
        expect(await ids(`namePrefix=${tag}&enabled=true`)).toEqual([0, 2, 4].map(id));
        expect(await ids(`namePrefix=${tag}&enabled=false`)).toEqual([1, 3].map(id));
        expect(await ids(`externalId=owner-${tag}`)).toEqual([0, 1].map(id));
        expect(await ids(`rateLimitId=${plan}`)).toEqual([3, 4].map(id));
        expect(await ids(`rateLimitId=${plan}&enabled=true`)).toEqual([4].map(id));
        // A prefix is text, not a pattern.
        expect(await ids(`namePrefix=${tag.slice(0, 2)}%25`)).toEqual([]);
        const first = await get(`/consumer-api-key?namePrefix=${tag}&limit=2`);
        const second = await get(
          `/consumer-api-key?namePrefix=${tag}&limit=2&cursor=${first.body.nextCursor}`,
        );
        expect(
          [...first.body.apiKeys, ...second.body.apiKeys].map(
            (k: { consumerApiKeyId: string }) => k.consumerApiKeyId,
          ),
        ).toEqual([0, 1, 2, 3].map(id));
        expect(second.body.apiKeys[0]).toMatchObject({
          enabled: true,
          externalId: null,
          rateLimitId: null,
          lastUsedAt: null,
          expiresAt: null,
        });
      });

      it.each(['enabled=yes', 'enabled=1', 'rateLimitId=', 'namePrefix=', 'owner=x'])(
        'refuses %s: 400 validation_failed',
        async (query) => {
          expectError(
            documented('get', '/consumer-api-key', await get(`/consumer-api-key?${query}`)),
            400,
            'validation_failed',
          );
        },
      );
    });

    describe('lastUsedAt', () => {
      it('shows the latest use written by any replica, never moving back, without moving lastUpdated', async () => {
        now = START;
        const key = await createKey();
        const t1 = Date.UTC(2026, 10, 21, 15, 0, 0);
        await keys.markUsed(new Map([[key.id, t1]]));
        await keys.markUsed(new Map([[key.id, t1 - 30_000]]));
        const detail = await get(`/consumer-api-key/${key.id}`);
        expect(detail.body).toMatchObject({
          lastUsedAt: '2026-11-21T15:00:00Z',
          lastUpdated: '2026-11-21T14:23:02Z',
        });
      });
    });

    describe('plans', () => {
      it('lists oldest first with keyCount and lastUpdated, one page at a time', async () => {
        const before = (await get('/rate-limit?limit=1000')).body.rateLimits.length;
        now = START + 3_600_000;
        const a = await createPlan(5, 'second');
        now = START + 3_601_000;
        const b = await createPlan(7, 'day');
        await createKey({ rateLimitId: b });
        await createKey({ rateLimitId: b });
        now = START;
        const all = documented('get', '/rate-limit', await get('/rate-limit?limit=1000'));
        expect(all.body.rateLimits).toHaveLength(before + 2);
        expect(all.body.rateLimits.slice(-2)).toEqual([
          {
            rateLimitId: a,
            description: '',
            limit: 5,
            period: 'second',
            createdAt: '2026-11-21T15:23:02Z',
            limits: [{ name: 'second', limit: 5, period: 'second', algorithm: 'fixed', per: 'key' }],
            lastUpdated: '2026-11-21T15:23:02Z',
            keyCount: 0,
            consumerCount: 0,
            costs: [],
            unit: 'requests',
          },
          {
            rateLimitId: b,
            description: '',
            limit: 7,
            period: 'day',
            createdAt: '2026-11-21T15:23:03Z',
            limits: [{ name: 'day', limit: 7, period: 'day', algorithm: 'fixed', per: 'key' }],
            lastUpdated: '2026-11-21T15:23:03Z',
            keyCount: 2,
            consumerCount: 0,
            costs: [],
            unit: 'requests',
          },
        ]);
        const pages = [];
        let cursor: string | undefined;
        do {
          const res = await get(`/rate-limit?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
          pages.push(...res.body.rateLimits.map((p: { rateLimitId: string }) => p.rateLimitId));
          cursor = res.body.nextCursor;
        } while (cursor);
        expect(pages).toEqual(all.body.rateLimits.map((p: { rateLimitId: string }) => p.rateLimitId));
      });

      it('shows one plan', async () => {
        const id = await createPlan(3, 'hour');
        expect(documented('get', PLAN, await get(`/rate-limit/${id}`)).body).toMatchObject({
          rateLimitId: id,
          limit: 3,
          period: 'hour',
          keyCount: 0,
        });
      });

      it('changes the limit; the current window keeps what it spent; key caches are told', async () => {
        const id = await createPlan(10, 'minute');
        const key = await createKey({ rateLimitId: id });
        for (let i = 0; i < 6; i++)
          limiter.consume(keyOnly(key.id, plan({ limit: 10, period: 'minute' })), 1, now);
        events.length = 0;
        now = START + 1_000;
        const res = documented(
          'patch',
          PLAN,
          await send('patch', `/rate-limit/${id}`, { limit: 8, description: 'smaller' }),
        );
        expect(res.body).toMatchObject({
          rateLimitId: id,
          limit: 8,
          period: 'minute',
          description: 'smaller',
          keyCount: 1,
          lastUpdated: '2026-11-21T14:23:03Z',
        });
        expect(events).toEqual([{ kind: 'plan', rateLimitId: id }]);
        expect((await get(`/consumer-api-key/${key.id}`)).body.usage.rateLimits).toMatchObject({
          limit: 8,
          remaining: 2,
        });
        now = START;
        // What a change leaves out stays as it was.
        expect((await send('patch', `/rate-limit/${id}`, { period: 'hour' })).body).toMatchObject({
          limit: 8,
          period: 'hour',
          description: 'smaller',
        });
        expectError(
          documented('patch', PLAN, await send('patch', `/rate-limit/${id}`, {})),
          400,
          'validation_failed',
        );
        expectError(
          documented('patch', PLAN, await send('patch', `/rate-limit/${id}`, { period: 'fortnight' })),
          400,
          'validation_failed',
        );
        expectError(
          documented('patch', PLAN, await send('patch', `/rate-limit/${id}`, { rateLimitId: 'other' })),
          400,
          'validation_failed',
        );
      });

      it('counts the keys of a plan it refuses to delete unless forced, which unbinds them', async () => {
        const id = await createPlan();
        const k1 = await createKey({ rateLimitId: id });
        const k2 = await createKey({ rateLimitId: id });
        // Refused without force (its table in src/management/resources/plans proves how), counting both.
        expect((await del(`/rate-limit/${id}`)).body.keyCount).toBe(2);
        events.length = 0;
        now = START + 5_000;
        const forced = documented('delete', PLAN, await del(`/rate-limit/${id}?force=true`));
        expect(forced.status).toBe(200);
        expect(forced.body).toEqual({ rateLimitId: id, message: expect.stringContaining(id) });
        expect(events).toEqual([{ kind: 'plan', rateLimitId: id }]);
        for (const k of [k1, k2]) {
          expect((await get(`/consumer-api-key/${k.id}`)).body).toMatchObject({
            rateLimitId: null,
            lastUpdated: '2026-11-21T14:23:07Z',
          });
        }
        now = START;
        expectError(documented('delete', PLAN, await del(`/rate-limit/${id}`)), 404, 'rate_limit_not_found');
        const unused = await createPlan();
        expect((await del(`/rate-limit/${unused}`)).status).toBe(200);
        expectError(await get(`/rate-limit/${unused}`), 404, 'rate_limit_not_found');
      });

      it('reserves the id "create"', async () => {
        const res = await send('post', '/rate-limit/create', {
          rateLimitId: 'create',
          limit: 1,
          period: 'day',
        });
        expectError(res, 400, 'validation_failed');
        expect(res.body.details).toEqual([{ field: 'rateLimitId', message: '"create" is reserved' }]);
      });
    });

    describe('a call that changes nothing', () => {
      it('writes no audit entry, tells no cache and leaves lastUpdated: the plan a key already has, the settings it already has', async () => {
        const plan = await createPlan();
        now = START;
        const key = await createKey({
          externalId: 'same',
          metadata: { a: 1, b: 2 },
          expiresAt: '2030-01-01T00:00:00Z',
        });
        now = START + 5_000;
        expect(
          (await send('post', '/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: plan }))
            .status,
        ).toBe(200);
        const entries = async () =>
          (await get(`/tollgate/audit-log?targetId=${key.id}`)).body.auditLog.map(
            (e: { action: string }) => e.action,
          );
        expect(await entries()).toEqual(['key.apply_plan', 'key.create']);
        events.length = 0;
        now = START + 60_000;

        const again = documented(
          'post',
          '/api-keys/apply-rate-limit',
          await send('post', '/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: plan }),
        );
        // The seed's answer, as for any binding.
        expect(again.body).toEqual({
          consumerApiKeyId: key.id,
          rateLimitId: plan,
          message: `Rate limit plan ${plan} applied to consumer API key ${key.id}`,
        });
        const same = {
          name: 'k',
          enabled: true,
          externalId: 'same',
          metadata: { a: 1, b: 2 },
          expiresAt: '2030-01-01T00:00:00Z',
        };
        const patched = documented('patch', KEY, await send('patch', `/consumer-api-key/${key.id}`, same));
        expect(patched.status).toBe(200);
        expect(patched.body).toMatchObject({ ...same, lastUpdated: '2026-11-21T14:23:07Z' });

        expect(await entries()).toEqual(['key.apply_plan', 'key.create']);
        expect(events).toEqual([]);
        expect((await get(`/consumer-api-key/${key.id}`)).body.lastUpdated).toBe('2026-11-21T14:23:07Z');
        // Metadata with its members in another order is a change: it is returned as given.
        const reordered = await send('patch', `/consumer-api-key/${key.id}`, { metadata: { b: 2, a: 1 } });
        expect(reordered.body.lastUpdated).toBe('2026-11-21T14:24:02Z');
        expect(await entries()).toEqual(['key.update', 'key.apply_plan', 'key.create']);
        now = START;
      });
    });

    describe('POST /api-keys/remove-rate-limit', () => {
      it('unbinds the plan (lastUpdated moves), answers the same when none was bound', async () => {
        const plan = await createPlan();
        const key = await createKey({ rateLimitId: plan });
        events.length = 0;
        now = START + 9_000;
        const res = documented(
          'post',
          '/api-keys/remove-rate-limit',
          await send('post', '/api-keys/remove-rate-limit', { consumerApiKeyId: key.id }),
        );
        expect(res.body).toEqual({
          consumerApiKeyId: key.id,
          rateLimitId: null,
          message: expect.any(String),
        });
        expect(events).toEqual([{ kind: 'key', keyId: key.id }]);
        expect((await get(`/consumer-api-key/${key.id}`)).body).toMatchObject({
          rateLimitId: null,
          lastUpdated: '2026-11-21T14:23:11Z',
        });
        now = START + 20_000;
        const again = await send('post', '/api-keys/remove-rate-limit', { consumerApiKeyId: key.id });
        expect(again.status).toBe(200);
        expect((await get(`/consumer-api-key/${key.id}`)).body.lastUpdated).toBe('2026-11-21T14:23:11Z');
        now = START;
        expectError(
          documented(
            'post',
            '/api-keys/remove-rate-limit',
            await send('post', '/api-keys/remove-rate-limit', { consumerApiKeyId: key.id, extra: 1 }),
          ),
          400,
          'validation_failed',
        );
      });
    });

    it('never logs a secret or the root token', () => {
      const log = logLines.join('\n');
      expect(secrets.length).toBeGreaterThan(5);
      for (const secret of [...secrets, ROOT_TOKEN]) expect(log).not.toContain(secret);
    });
  },
);
