/**
 * The management API in process over real storage: embedded PGlite and a real Postgres, the same suite
 * for both. Every response that has a documented schema is also checked against the OpenAPI document.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Express } from 'express';
import { sql } from 'kysely';
import request, { type Response } from 'supertest';
import { LocalKeyEvents, type KeyChange } from '../../src/keys/key-events.js';
import { hashSecret } from '../../src/keys/secret.js';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import { PERIODS } from '../../src/plans/window.js';
import { createManagementApp, type ManagementDeps } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { openPostgres } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, storeDeps, type Storage } from '../helpers/management-storage.js';
import { keyOnly, plan } from '../helpers/plans.js';
import { refused, requestFacts } from '../helpers/request-facts.js';

const BACKENDS = STORAGES;

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
const START = Date.UTC(2026, 10, 21, 14, 23, 2, 789);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const KEY_PATH = '/consumer-api-key/{consumerApiKeyId}';

/** Everything the app logs, to prove no secret and no root token ever reaches a log line. */
const logLines: string[] = [];
const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

type Method = 'get' | 'post' | 'patch' | 'delete';

/** The response, after checking it against the OpenAPI document. */
function documented(method: Method, template: string, res: Response): Response {
  expect(checker.problems(method, template, res)).toEqual([]);
  return res;
}

function expectError(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body).toMatchObject({ code, error: expect.any(String) });
}

describe.each(Object.keys(BACKENDS) as (keyof typeof BACKENDS)[])('management API on %s storage', (kind) => {
  let storage: Storage;
  let deps: ManagementDeps;
  let app: Express;
  let recorder: UsageRecorder;
  let limiter: MemoryRateLimiter;
  let now = START;
  const events: KeyChange[] = [];
  const secrets: string[] = [];
  const encryptionKey = randomBytes(32);

  beforeAll(async () => {
    storage = await BACKENDS[kind]();
    await migrate(storage.handle);
    const metrics = new Metrics();
    const usageRepository = new UsageRepository(storage.handle.db);
    recorder = new UsageRecorder(new DatabaseUsageSink(usageRepository), logger, metrics);
    limiter = new MemoryRateLimiter();
    const keyEvents = new LocalKeyEvents();
    keyEvents.subscribe((change) => events.push(change));
    deps = managementDeps(storage.handle.db, {
      usage: new UsageReader(usageRepository, [recorder]),
      limiter,
      keyEvents,
      encryptionKeys: [encryptionKey],
      rootToken: ROOT_TOKEN,
      logger,
      metrics,
      clock: () => now,
    });
    app = createManagementApp(deps);
  }, 60_000);

  afterAll(async () => {
    await limiter.close();
    await storage.dispose();
  });

  const post = (path: string, body: unknown, target: Express = app) =>
    request(target)
      .post(path)
      .set(AUTH)
      .send(body as object);
  const get = (path: string, target: Express = app) => request(target).get(path).set(AUTH);

  async function createKey(
    name = 'test key',
    target: Express = app,
  ): Promise<{ id: string; secret: string; createdAt: string }> {
    const res = await post('/consumer-api-key/create', { name }, target);
    expect(res.status).toBe(201);
    secrets.push(res.body.secret);
    return res.body;
  }

  async function createPlan(limit: number, period: string): Promise<string> {
    const rateLimitId = `plan-${randomBytes(6).toString('hex')}`;
    const res = await post('/rate-limit/create', { rateLimitId, limit, period });
    expect(res.status).toBe(201);
    return rateLimitId;
  }

  describe('authentication', () => {
    const routes: [string, string][] = [
      ['post', '/consumer-api-key/create'],
      ['get', '/consumer-api-key'],
      ['get', '/consumer-api-key/key_x'],
      ['delete', '/consumer-api-key/key_x'],
      ['post', '/rate-limit/create'],
      ['post', '/api-keys/apply-rate-limit'],
    ];

    it.each(routes)(
      '%s %s without a token: 401 unauthorized with a Bearer challenge',
      async (method, path) => {
        const res = await request(app)[method as Method](path).send({ name: 'x' });
        expectError(res, 401, 'unauthorized');
        expect(res.headers['www-authenticate']).toBe('Bearer');
      },
    );

    it.each([
      ['a wrong token', `Bearer ${ROOT_TOKEN}x`],
      ['a prefix of the token', `Bearer ${ROOT_TOKEN.slice(0, -1)}`],
      ['another scheme', `Basic ${Buffer.from(`admin:${ROOT_TOKEN}`).toString('base64')}`],
      ['the token without a scheme', ROOT_TOKEN],
      ['an empty bearer', 'Bearer '],
    ])('%s: 401 unauthorized', async (_label, header) => {
      const res = await request(app).get('/consumer-api-key').set('Authorization', header);
      expectError(res, 401, 'unauthorized');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer( |$)/);
      documented('get', '/consumer-api-key', res);
    });

    it('says invalid_token in the challenge when a wrong bearer token was sent', async () => {
      const res = await request(app).get('/consumer-api-key').set('Authorization', 'Bearer wrong-token');
      expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    });

    it('accepts the scheme in any case, as RFC 7235 has it', async () => {
      const res = await request(app).get('/consumer-api-key').set('Authorization', `bearer ${ROOT_TOKEN}`);
      expect(res.status).toBe(200);
    });

    it('asks for the token before saying a route does not exist', async () => {
      expectError(await request(app).get('/nowhere'), 401, 'unauthorized');
    });
  });

  describe('POST /consumer-api-key/create', () => {
    it('creates a key: 201 with id, name, secret and createdAt as YYYY-MM-DD HH:MM:SS (UTC)', async () => {
      const res = documented(
        'post',
        '/consumer-api-key/create',
        await post('/consumer-api-key/create', { name: 'Mobile app' }),
      );
      expect(res.status).toBe(201);
      // The seed's four fields, and the lifecycle fields added beside them.
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'Mobile app',
        secret: expect.any(String),
        createdAt: '2026-11-21 14:23:02',
        rateLimitId: null,
        enabled: true,
        expiresAt: null,
        externalId: null,
        lastUsedAt: null,
        consumerId: null,
        allowedRouteIds: null,
        allowedOrigins: null,
        allowedAddresses: null,
        metadata: {},
        credits: null,
      });
      expect(res.body.secret).toMatch(/^tg_[0-9A-Za-z]{36}$/);
      expect(res.headers.location).toBe(`/consumer-api-key/${res.body.id}`);
      expect(res.headers['cache-control']).toBe('no-store');
      secrets.push(res.body.secret);
    });

    it('stores the secret as a hash for lookup and as ciphertext, never in plain text', async () => {
      const { id, secret } = await createKey();
      expect(await deps.keys.findBySecretHash(hashSecret(secret))).toMatchObject({ id, rateLimitId: null });
      const row = await storage.handle.db
        .selectFrom('api_keys')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(Buffer.from(row.secret_ciphertext).includes(secret)).toBe(false);
      expect(Buffer.from(row.secret_ciphertext).includes(secret.slice(3))).toBe(false);
      expect(Buffer.from(row.secret_hash)).toEqual(hashSecret(secret));
    });

    it('gives every key its own id and secret', async () => {
      const a = await createKey();
      const b = await createKey();
      expect(a.id).not.toBe(b.id);
      expect(a.secret).not.toBe(b.secret);
    });

    it.each([
      ['1 character', 'x'],
      ['200 characters', 'n'.repeat(200)],
      ['200 astral characters (counted as characters, not UTF-16 units)', '🔑'.repeat(200)],
      ['spaces and punctuation', '  Partner: ACME / EU (prod) — "v2"  '],
    ])('accepts a name of %s', async (_label, name) => {
      const res = documented(
        'post',
        '/consumer-api-key/create',
        await post('/consumer-api-key/create', { name }),
      );
      expect(res.status).toBe(201);
      expect(res.body.name).toBe(name);
      secrets.push(res.body.secret);
    });

    it.each([
      ['no name', {}, [{ field: 'name', message: 'is required' }]],
      ['an empty name', { name: '' }, [{ field: 'name', message: expect.stringContaining('fewer than 1') }]],
      [
        '201 characters',
        { name: 'n'.repeat(201) },
        [{ field: 'name', message: expect.stringContaining('more than 200') }],
      ],
      ['a number', { name: 42 }, [{ field: 'name', message: 'must be string' }]],
      ['null', { name: null }, [{ field: 'name', message: 'must be string' }]],
      ['U+0000', { name: 'a\u0000b' }, [{ field: 'name', message: expect.stringContaining('pattern') }]],
      [
        'an unknown property',
        { name: 'x', owner: 'me' },
        [{ field: 'owner', message: 'is not an accepted field' }],
      ],
      [
        'several problems at once',
        { nam: 'typo', extra: true },
        [
          { field: 'name', message: 'is required' },
          { field: 'nam', message: 'is not an accepted field' },
          { field: 'extra', message: 'is not an accepted field' },
        ],
      ],
      ['an array', [{ name: 'x' }], [{ field: '(body)', message: 'must be object' }]],
      ['a string', 'name', [{ field: '(body)', message: 'must be object' }]],
      ['null', null, [{ field: '(body)', message: 'must be object' }]],
    ])('refuses %s: 400 validation_failed naming each field', async (_label, body, details) => {
      const res = await request(app)
        .post('/consumer-api-key/create')
        .set(AUTH)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify(body));
      expectError(res, 400, 'validation_failed');
      expect(res.body.details).toEqual(expect.arrayContaining(details));
      expect(res.body.details).toHaveLength(details.length);
      for (const { field } of details) expect(res.body.error).toContain(field);
      documented('post', '/consumer-api-key/create', res);
    });

    it.each([
      ['truncated JSON', '{"name":'],
      ['single quotes', "{'name':'x'}"],
      ['a trailing comma', '{"name":"x",}'],
      ['an empty body', ''],
      ['two documents', '{"name":"x"}{"name":"y"}'],
    ])('refuses %s: 400 invalid_json', async (_label, text) => {
      const res = await request(app)
        .post('/consumer-api-key/create')
        .set(AUTH)
        .set('Content-Type', 'application/json')
        .send(text);
      expectError(res, 400, 'invalid_json');
      documented('post', '/consumer-api-key/create', res);
    });

    it.each([
      ['text/plain', 'text/plain'],
      ['a form', 'application/x-www-form-urlencoded'],
      ['multipart', 'multipart/form-data; boundary=x'],
      ['a JSON look-alike', 'application/jsonx'],
      ['JSON in another charset', 'application/json; charset=latin1'],
    ])('refuses %s: 415 unsupported_media_type', async (_label, type) => {
      const res = await request(app)
        .post('/consumer-api-key/create')
        .set(AUTH)
        .set('Content-Type', type)
        .send('{"name":"x"}');
      expectError(res, 415, 'unsupported_media_type');
      documented('post', '/consumer-api-key/create', res);
    });

    it('refuses a body without a content type: 415', async () => {
      expectError(
        await request(app).post('/consumer-api-key/create').set(AUTH),
        415,
        'unsupported_media_type',
      );
    });

    it('refuses a compressed body: 415', async () => {
      const res = await request(app)
        .post('/consumer-api-key/create')
        .set(AUTH)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .send(gzipSync('{"name":"x"}'));
      expectError(res, 415, 'unsupported_media_type');
    });

    it('accepts an explicit UTF-8 charset', async () => {
      const res = await request(app)
        .post('/consumer-api-key/create')
        .set(AUTH)
        .set('Content-Type', 'application/json; charset=UTF-8')
        .send('{"name":"Zürich"}');
      expect(res.status).toBe(201);
      expect(res.body.name).toBe('Zürich');
      secrets.push(res.body.secret);
    });

    it('refuses a body over 64 KiB: 413 payload_too_large', async () => {
      const res = await post('/consumer-api-key/create', { name: 'x'.repeat(70_000) });
      expectError(res, 413, 'payload_too_large');
      documented('post', '/consumer-api-key/create', res);
    });

    it('reads a body of exactly 64 KiB (and then judges its content)', async () => {
      const text = JSON.stringify({ name: 'x'.repeat(65_536 - 11) });
      expect(Buffer.byteLength(text)).toBe(65_536);
      const res = await request(app)
        .post('/consumer-api-key/create')
        .set(AUTH)
        .set('Content-Type', 'application/json')
        .send(text);
      expectError(res, 400, 'validation_failed');
    });

    it.each([
      ['__proto__', '{"name":"x","__proto__":{"polluted":true}}', '__proto__'],
      ['constructor.prototype', '{"name":"x","constructor":{"prototype":{"polluted":true}}}', 'constructor'],
      ['a lone __proto__', '{"__proto__":{"name":"x","polluted":true}}', '__proto__'],
    ])('refuses a %s key without polluting any prototype', async (_label, text, field) => {
      const res = await request(app)
        .post('/consumer-api-key/create')
        .set(AUTH)
        .set('Content-Type', 'application/json')
        .send(text);
      expectError(res, 400, 'validation_failed');
      expect(res.body.details).toContainEqual({ field, message: 'is not an accepted field' });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
    });
  });

  describe('GET /consumer-api-key', () => {
    /** Every page from the first, following nextCursor. */
    async function allPages(limit: number): Promise<Response[]> {
      const pages: Response[] = [];
      let cursor: string | undefined;
      do {
        const query = new URLSearchParams({ limit: String(limit), ...(cursor && { cursor }) });
        const res = documented('get', '/consumer-api-key', await get(`/consumer-api-key?${query}`));
        expect(res.status).toBe(200);
        pages.push(res);
        cursor = res.body.nextCursor;
      } while (cursor !== undefined);
      return pages;
    }

    /** Exactly `count` keys in the store, one second apart. */
    async function onlyKeys(count: number): Promise<{ id: string }[]> {
      await sql`delete from api_keys`.execute(storage.handle.db);
      now = START;
      const created = [];
      for (let i = 0; i < count; i++) {
        now += 1000;
        created.push(await createKey(`page key ${i}`));
      }
      return created;
    }

    it('pages oldest first with nextCursor only while more remain', async () => {
      const created = await onlyKeys(5);
      const pages = await allPages(2);
      expect(pages.map((p) => p.body.apiKeys.length)).toEqual([2, 2, 1]);
      expect(pages.map((p) => 'nextCursor' in p.body)).toEqual([true, true, false]);
      const listed = pages.flatMap((p) => p.body.apiKeys);
      expect(listed.map((k: { consumerApiKeyId: string }) => k.consumerApiKeyId)).toEqual(
        created.map((k) => k.id),
      );
      expect(listed[0]).toEqual({
        consumerApiKeyId: created[0]!.id,
        name: 'page key 0',
        createdAt: '2026-11-21T14:23:03Z',
        lastUpdated: '2026-11-21T14:23:03Z',
        rateLimitId: null,
        enabled: true,
        expiresAt: null,
        externalId: null,
        lastUsedAt: null,
        consumerId: null,
        allowedRouteIds: null,
        allowedOrigins: null,
        allowedAddresses: null,
      });
      for (const item of listed) expect(item.createdAt).toMatch(ISO);

      // A page that ends exactly at the last key says nothing more remains.
      expect((await get('/consumer-api-key?limit=5')).body).not.toHaveProperty('nextCursor');
      // Default page size 100: all five, no cursor.
      const whole = documented('get', '/consumer-api-key', await get('/consumer-api-key'));
      expect(whole.body.apiKeys).toHaveLength(5);
      expect(whole.body).not.toHaveProperty('nextCursor');
    });

    it('orders by creation time, then id, whatever order the keys were stored in', async () => {
      await sql`delete from api_keys`.execute(storage.handle.db);
      // Stored in this order, created in the reverse (as concurrent creates can commit), two at one instant.
      const created = [];
      for (const at of [START + 3000, START + 2000, START + 1000, START + 1000]) {
        now = at;
        created.push({ ...(await createKey(`at ${at}`)), at });
      }
      const expected = [...created].sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1)).map((k) => k.id);
      const listed = (await allPages(1)).flatMap((p) =>
        p.body.apiKeys.map((k: { consumerApiKeyId: string }) => k.consumerApiKeyId),
      );
      expect(listed).toEqual(expected);
    });

    it('continues after a cursor whose key was deleted meanwhile, and never lists deleted keys', async () => {
      await onlyKeys(5);
      const first = await get('/consumer-api-key?limit=2');
      const [, second] = first.body.apiKeys as { consumerApiKeyId: string }[];
      expect(
        (await request(app).delete(`/consumer-api-key/${second!.consumerApiKeyId}`).set(AUTH)).status,
      ).toBe(200);
      const rest = await get(`/consumer-api-key?limit=100&cursor=${first.body.nextCursor}`);
      expect(rest.status).toBe(200);
      expect(rest.body.apiKeys).toHaveLength(3);
      const all = await get('/consumer-api-key?limit=1000');
      expect(all.body.apiKeys.map((k: { consumerApiKeyId: string }) => k.consumerApiKeyId)).not.toContain(
        second!.consumerApiKeyId,
      );
    });

    it('shows lastUpdated moving on when a plan is bound, createdAt staying', async () => {
      await sql`delete from api_keys`.execute(storage.handle.db);
      const key = await createKey('rebound');
      const plan = await createPlan(10, 'hour');
      now += 60_000;
      expect(
        (await post('/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: plan })).status,
      ).toBe(200);
      const [item] = (await get('/consumer-api-key')).body.apiKeys;
      expect(item.createdAt).toBe(key.createdAt.replace(' ', 'T') + 'Z');
      expect(Date.parse(item.lastUpdated) - Date.parse(item.createdAt)).toBe(60_000);
    });

    it('answers HEAD like GET, without a body', async () => {
      const head = await request(app).head('/consumer-api-key').set(AUTH);
      expect(head.status).toBe(200);
      expect(head.headers['content-type']).toMatch(/^application\/json/);
      expect(head.text ?? '').toBe('');
    });

    it.each([
      ['0'],
      ['1001'],
      ['-1'],
      ['abc'],
      ['1.5'],
      [''],
      ['10&limit=20'],
      ['1e3'],
      ['0x10'],
      ['%2010'],
      ['Infinity'],
      ['%2B5'],
      ['10.0'],
    ])('refuses limit=%s: 400 validation_failed naming limit', async (limit) => {
      const res = documented('get', '/consumer-api-key', await get(`/consumer-api-key?limit=${limit}`));
      expectError(res, 400, 'validation_failed');
      expect(res.body.details).toEqual([expect.objectContaining({ field: 'limit' })]);
    });

    it.each([['limt'], ['__proto__'], ['constructor']])(
      'refuses the unknown query parameter %s: 400 validation_failed',
      async (name) => {
        const res = await get(`/consumer-api-key?${name}=5`);
        expectError(res, 400, 'validation_failed');
        expect(res.body.details).toEqual([{ field: name, message: 'is not an accepted field' }]);
        expect(Object.prototype).not.toHaveProperty('5');
      },
    );

    it.each([
      ['garbage', 'not-a-cursor'],
      ['empty', ''],
      ['a bare number', '5'],
      ['a forged cursor', Buffer.from('v1:-5').toString('base64url')],
      ['two cursors', 'djE6MQ&cursor=djE6Mg'],
    ])('refuses %s as cursor: 400 invalid_cursor', async (_label, cursor) => {
      const res = documented('get', '/consumer-api-key', await get(`/consumer-api-key?cursor=${cursor}`));
      expectError(res, 400, 'invalid_cursor');
    });
  });

  describe('GET /consumer-api-key/{id}', () => {
    it('shows the key with its secret, ISO timestamps and empty usage; rateLimits null without a plan or default', async () => {
      now = START;
      const key = await createKey('detail');
      const res = documented('get', KEY_PATH, await get(`/consumer-api-key/${key.id}`));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        consumerApiKeyId: key.id,
        name: 'detail',
        secret: key.secret,
        createdAt: '2026-11-21T14:23:02Z',
        lastUpdated: '2026-11-21T14:23:02Z',
        rateLimitId: null,
        enabled: true,
        expiresAt: null,
        externalId: null,
        lastUsedAt: null,
        consumerId: null,
        allowedRouteIds: null,
        allowedOrigins: null,
        allowedAddresses: null,
        metadata: {},
        credits: null,
        leak: null,
        usage: {
          totalRequests: 0,
          successfulRequests: 0,
          failedRequests: 0,
          cost: 0,
          unsettled: 0,
          rateLimits: null,
          endpoints: [],
          usageByCustomer: [],
        },
      });
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('reports usage stored in the database together with usage not flushed yet', async () => {
      const key = await createKey('busy');
      recorder.record(requestFacts(key.id, { endpoint: '/v1/orders', customerId: 'acme', durationMs: 10 }));
      recorder.record(
        requestFacts(key.id, {
          endpoint: '/v1/orders',
          customerId: 'acme',
          status: 502,
          outcome: 'backendUnreachable',
          durationMs: 30,
        }),
      );
      recorder.record(
        requestFacts(key.id, { endpoint: '/v1/orders', ...refused('rateLimited'), durationMs: 20 }),
      );
      await recorder.flush();
      recorder.record(requestFacts(key.id, { endpoint: '/v1/items', customerId: 'globex', durationMs: 5 }));
      const res = documented('get', KEY_PATH, await get(`/consumer-api-key/${key.id}`));
      expect(res.body.usage).toEqual({
        totalRequests: 4,
        successfulRequests: 2,
        failedRequests: 2,
        cost: 3,
        unsettled: 0,
        rateLimits: null,
        endpoints: [
          {
            endpoint: '/v1/orders',
            requests: 3,
            successful: 1,
            failed: 2,
            averageResponseTimeMs: 20,
            cost: 2,
            unsettled: 0,
          },
          {
            endpoint: '/v1/items',
            requests: 1,
            successful: 1,
            failed: 0,
            averageResponseTimeMs: 5,
            cost: 1,
            unsettled: 0,
          },
        ],
        usageByCustomer: [
          { customerId: 'acme', requests: 2, successful: 1, failed: 1 },
          { customerId: 'globex', requests: 1, successful: 1, failed: 0 },
        ],
      });
      await recorder.flush();
    });

    it("reports the bound plan's limit, what remains and the window end, without consuming quota", async () => {
      now = START;
      const key = await createKey('limited');
      const rateLimitId = await createPlan(5, 'minute');
      await post('/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId });
      await limiter.consume(keyOnly(key.id, plan({ limit: 5, period: 'minute' })), 1, now);
      await limiter.consume(keyOnly(key.id, plan({ limit: 5, period: 'minute' })), 1, now);
      for (let i = 0; i < 2; i++) {
        const res = documented('get', KEY_PATH, await get(`/consumer-api-key/${key.id}`));
        expect(res.body.usage.rateLimits).toEqual({
          limit: 5,
          remaining: 3,
          resetTime: '2026-11-21T14:24:00Z',
          limits: [
            {
              name: 'minute',
              limit: 5,
              period: 'minute',
              remaining: 3,
              resetTime: '2026-11-21T14:24:00Z',
              scope: 'key',
              per: 'key',
            },
          ],
        });
      }
      // A new window starts afresh.
      now = Date.UTC(2026, 10, 21, 14, 24, 0, 0);
      expect((await get(`/consumer-api-key/${key.id}`)).body.usage.rateLimits).toEqual({
        limit: 5,
        remaining: 5,
        resetTime: '2026-11-21T14:25:00Z',
        limits: [
          {
            name: 'minute',
            limit: 5,
            period: 'minute',
            remaining: 5,
            resetTime: '2026-11-21T14:25:00Z',
            scope: 'key',
            per: 'key',
          },
        ],
      });
      now = START;
    });

    it('falls back to DEFAULT_RATE_LIMIT for a key without a plan; a plan takes precedence', async () => {
      const withDefault = createManagementApp({
        ...deps,
        defaultRateLimit: plan({ limit: 1000, period: 'hour' }),
      });
      const key = await createKey('default-limited');
      const res = documented('get', KEY_PATH, await get(`/consumer-api-key/${key.id}`, withDefault));
      expect(res.body.usage.rateLimits).toEqual({
        limit: 1000,
        remaining: 1000,
        resetTime: '2026-11-21T15:00:00Z',
        limits: [
          {
            name: 'hour',
            limit: 1000,
            period: 'hour',
            remaining: 1000,
            resetTime: '2026-11-21T15:00:00Z',
            scope: 'key',
            per: 'key',
          },
        ],
      });
      const rateLimitId = await createPlan(7, 'day');
      await post('/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId });
      expect((await get(`/consumer-api-key/${key.id}`, withDefault)).body.usage.rateLimits).toEqual({
        limit: 7,
        remaining: 7,
        resetTime: '2026-11-22T00:00:00Z',
        limits: [
          {
            name: 'day',
            limit: 7,
            period: 'day',
            remaining: 7,
            resetTime: '2026-11-22T00:00:00Z',
            scope: 'key',
            per: 'key',
          },
        ],
      });
    });

    it('opens secrets sealed with a previous encryption key during a rotation', async () => {
      const key = await createKey('before rotation');
      const rotated = createManagementApp({ ...deps, encryptionKeys: [randomBytes(32), encryptionKey] });
      const res = await get(`/consumer-api-key/${key.id}`, rotated);
      expect(res.status).toBe(200);
      expect(res.body.secret).toBe(key.secret);
    });

    it.each([
      ['an unknown id', 'key_doesnotexist'],
      ['an id with U+0000', 'key_%00'],
      ['an id with an encoded slash', 'key_a%2Fb'],
      ['a malformed percent-encoding', 'key_%E0%A4%A'],
      ['a very long id', 'k'.repeat(5000)],
      ['a SQL-looking id', "key_'%20or%20'1'='1"],
    ])('answers %s with 404 key_not_found', async (_label, id) => {
      const res = documented('get', KEY_PATH, await get(`/consumer-api-key/${id}`));
      expectError(res, 404, 'key_not_found');
    });
  });

  describe('DELETE /consumer-api-key/{id}', () => {
    it('deletes the key, confirms it and tells the key caches', async () => {
      const key = await createKey('doomed');
      events.length = 0;
      const res = documented(
        'delete',
        KEY_PATH,
        await request(app).delete(`/consumer-api-key/${key.id}`).set(AUTH),
      );
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ consumerApiKeyId: key.id, message: expect.stringContaining('deleted') });
      expect(events).toEqual([{ kind: 'key', keyId: key.id }]);
      expectError(await get(`/consumer-api-key/${key.id}`), 404, 'key_not_found');
      expect(await deps.keys.findBySecretHash(hashSecret(key.secret))).toBeUndefined();
    });

    it('answers an unknown or already deleted key with 404 key_not_found and tells nobody', async () => {
      const key = await createKey('twice');
      await request(app).delete(`/consumer-api-key/${key.id}`).set(AUTH);
      events.length = 0;
      const res = documented(
        'delete',
        KEY_PATH,
        await request(app).delete(`/consumer-api-key/${key.id}`).set(AUTH),
      );
      expectError(res, 404, 'key_not_found');
      expectError(await request(app).delete('/consumer-api-key/%00').set(AUTH), 404, 'key_not_found');
      expect(events).toEqual([]);
    });
  });

  describe('POST /rate-limit/create', () => {
    it('creates a plan: 201 echoing the fields with createdAt as ISO 8601', async () => {
      now = START;
      const body = {
        rateLimitId: 'gold.v1:eu_west-1',
        description: 'Gold tier',
        limit: 1000,
        period: 'hour',
      };
      const res = documented('post', '/rate-limit/create', await post('/rate-limit/create', body));
      expect(res.status).toBe(201);
      // The seed's fields, plus the plan's limits (one, named after its period), lastUpdated and keyCount.
      expect(res.body).toEqual({
        ...body,
        createdAt: '2026-11-21T14:23:02Z',
        limits: [{ name: 'hour', limit: 1000, period: 'hour', algorithm: 'fixed', per: 'key' }],
        lastUpdated: '2026-11-21T14:23:02Z',
        keyCount: 0,
        consumerCount: 0,
        costs: [],
        unit: 'requests',
      });
      expect(await deps.plans.get('gold.v1:eu_west-1')).toMatchObject({
        limits: [{ name: 'hour', limit: 1000, period: 'hour', algorithm: 'fixed' }],
        description: 'Gold tier',
      });
    });

    it('defaults the description to ""', async () => {
      const res = documented(
        'post',
        '/rate-limit/create',
        await post('/rate-limit/create', { rateLimitId: 'no-description', limit: 1, period: 'second' }),
      );
      expect(res.status).toBe(201);
      expect(res.body.description).toBe('');
    });

    it.each(PERIODS.map((p) => [p]))('accepts the period %s', async (period) => {
      const res = await post('/rate-limit/create', { rateLimitId: `every-${period}`, limit: 3, period });
      expect(res.status).toBe(201);
      expect(res.body.period).toBe(period);
    });

    it('accepts the largest limit, 2^53 - 1, and a 128-character id', async () => {
      const rateLimitId = 'x'.repeat(128);
      const res = await post('/rate-limit/create', {
        rateLimitId,
        limit: Number.MAX_SAFE_INTEGER,
        period: 'month',
      });
      expect(res.status).toBe(201);
      expect(res.body.limit).toBe(9007199254740991);
      expect((await deps.plans.get(rateLimitId))?.limits[0]!.limit).toBe(9007199254740991);
    });

    it('refuses a second plan under the same id: 409 rate_limit_exists, the first one unchanged', async () => {
      await post('/rate-limit/create', { rateLimitId: 'taken', limit: 10, period: 'day' });
      const res = documented(
        'post',
        '/rate-limit/create',
        await post('/rate-limit/create', { rateLimitId: 'taken', limit: 99, period: 'minute' }),
      );
      expectError(res, 409, 'rate_limit_exists');
      expect(await deps.plans.get('taken')).toMatchObject({ limits: [{ limit: 10, period: 'day' }] });
    });

    const valid = { rateLimitId: 'p', limit: 10, period: 'hour' };
    it.each([
      ['an empty body', {}, ['rateLimitId', 'limit', 'period']],
      ['limit 0', { ...valid, limit: 0 }, ['limit']],
      ['a negative limit', { ...valid, limit: -5 }, ['limit']],
      ['a fractional limit', { ...valid, limit: 1.5 }, ['limit']],
      ['a limit as a string', { ...valid, limit: '10' }, ['limit']],
      ['limit 2^53', { ...valid, limit: 9007199254740992 }, ['limit']],
      ['an unknown period', { ...valid, period: 'fortnight' }, ['period']],
      ['a capitalised period', { ...valid, period: 'Hour' }, ['period']],
      ['an id with a slash', { ...valid, rateLimitId: 'a/b' }, ['rateLimitId']],
      ['an id with a space', { ...valid, rateLimitId: 'a b' }, ['rateLimitId']],
      ['an empty id', { ...valid, rateLimitId: '' }, ['rateLimitId']],
      ['a 129-character id', { ...valid, rateLimitId: 'x'.repeat(129) }, ['rateLimitId']],
      ['a numeric id', { ...valid, rateLimitId: 7 }, ['rateLimitId']],
      ['a 1001-character description', { ...valid, description: 'd'.repeat(1001) }, ['description']],
      ['a null description', { ...valid, description: null }, ['description']],
      ['an unknown property', { ...valid, burst: 5 }, ['burst']],
    ])('refuses %s: 400 validation_failed naming each field', async (_label, body, fields) => {
      const res = documented('post', '/rate-limit/create', await post('/rate-limit/create', body));
      expectError(res, 400, 'validation_failed');
      expect(res.body.details.map((d: { field: string }) => d.field).sort()).toEqual([...fields].sort());
    });

    it('refuses malformed JSON, other media types and big bodies like every route', async () => {
      const raw = () => request(app).post('/rate-limit/create').set(AUTH);
      expectError(await raw().set('Content-Type', 'application/json').send('{"limit":'), 400, 'invalid_json');
      expectError(await raw().set('Content-Type', 'text/plain').send('{}'), 415, 'unsupported_media_type');
      expectError(
        await post('/rate-limit/create', { ...valid, description: 'd'.repeat(70_000) }),
        413,
        'payload_too_large',
      );
      expectError(
        await raw().set('Content-Type', 'application/json').send('{"__proto__":{"limit":1}}'),
        400,
        'validation_failed',
      );
    });
  });

  describe('POST /api-keys/apply-rate-limit', () => {
    it('binds the plan: 200 with both ids and a message; lastUpdated moves; the key caches are told', async () => {
      now = START;
      const key = await createKey('to bind');
      const plan = await createPlan(100, 'minute');
      events.length = 0;
      now = START + 90_000;
      const res = documented(
        'post',
        '/api-keys/apply-rate-limit',
        await post('/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: plan }),
      );
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ consumerApiKeyId: key.id, rateLimitId: plan, message: expect.any(String) });
      expect(events).toEqual([{ kind: 'key', keyId: key.id }]);
      const detail = (await get(`/consumer-api-key/${key.id}`)).body;
      expect(detail.createdAt).toBe('2026-11-21T14:23:02Z');
      expect(detail.lastUpdated).toBe('2026-11-21T14:24:32Z');
      expect(detail.usage.rateLimits).toMatchObject({ limit: 100, resetTime: '2026-11-21T14:25:00Z' });
      expect(await deps.keys.findBySecretHash(hashSecret(key.secret))).toMatchObject({
        rateLimitId: plan,
        limits: [{ name: 'minute', limit: 100, period: 'minute', algorithm: 'fixed' }],
      });
      now = START;
    });

    it("replaces the key's previous plan", async () => {
      const key = await createKey('rebind');
      const first = await createPlan(10, 'second');
      const second = await createPlan(20, 'week');
      await post('/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: first });
      await post('/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: second });
      // 2026-11-21 is a Saturday: the week ends Monday 2026-11-23 00:00.
      expect((await get(`/consumer-api-key/${key.id}`)).body.usage.rateLimits).toEqual({
        limit: 20,
        remaining: 20,
        resetTime: '2026-11-23T00:00:00Z',
        limits: [
          {
            name: 'week',
            limit: 20,
            period: 'week',
            remaining: 20,
            resetTime: '2026-11-23T00:00:00Z',
            scope: 'key',
            per: 'key',
          },
        ],
      });
    });

    it('answers 404 key_not_found for an unknown key and 404 rate_limit_not_found for an unknown plan', async () => {
      const key = await createKey('lonely');
      const plan = await createPlan(1, 'day');
      events.length = 0;
      const noKey = await post('/api-keys/apply-rate-limit', {
        consumerApiKeyId: 'key_missing',
        rateLimitId: plan,
      });
      expectError(documented('post', '/api-keys/apply-rate-limit', noKey), 404, 'key_not_found');
      const noPlan = await post('/api-keys/apply-rate-limit', {
        consumerApiKeyId: key.id,
        rateLimitId: 'no-such-plan',
      });
      expectError(documented('post', '/api-keys/apply-rate-limit', noPlan), 404, 'rate_limit_not_found');
      const neither = await post('/api-keys/apply-rate-limit', {
        consumerApiKeyId: 'key_missing',
        rateLimitId: 'no-such-plan',
      });
      expectError(neither, 404, 'rate_limit_not_found');
      expect(events).toEqual([]);
      expect((await get(`/consumer-api-key/${key.id}`)).body.usage.rateLimits).toBeNull();
    });

    it.each([
      ['an empty body', {}, ['consumerApiKeyId', 'rateLimitId']],
      ['a numeric key id', { consumerApiKeyId: 5, rateLimitId: 'p' }, ['consumerApiKeyId']],
      ['a key id with a slash', { consumerApiKeyId: 'key/1', rateLimitId: 'p' }, ['consumerApiKeyId']],
      ['a key id with U+0000', { consumerApiKeyId: 'key_\u0000', rateLimitId: 'p' }, ['consumerApiKeyId']],
      ['an unknown property', { consumerApiKeyId: 'key_1', rateLimitId: 'p', force: true }, ['force']],
      ['an array of ids', { consumerApiKeyId: ['key_1'], rateLimitId: 'p' }, ['consumerApiKeyId']],
    ])('refuses %s: 400 validation_failed naming each field', async (_label, body, fields) => {
      const res = documented(
        'post',
        '/api-keys/apply-rate-limit',
        await post('/api-keys/apply-rate-limit', body),
      );
      expectError(res, 400, 'validation_failed');
      expect(res.body.details.map((d: { field: string }) => d.field).sort()).toEqual([...fields].sort());
    });

    it('refuses malformed JSON, other media types, big bodies and prototype keys', async () => {
      const raw = () => request(app).post('/api-keys/apply-rate-limit').set(AUTH);
      expectError(await raw().set('Content-Type', 'application/json').send('nope'), 400, 'invalid_json');
      expectError(
        await raw().set('Content-Type', 'application/xml').send('<a/>'),
        415,
        'unsupported_media_type',
      );
      expectError(
        await post('/api-keys/apply-rate-limit', { consumerApiKeyId: 'k'.repeat(70_000), rateLimitId: 'p' }),
        413,
        'payload_too_large',
      );
      const polluting = await raw()
        .set('Content-Type', 'application/json')
        .send('{"consumerApiKeyId":"key_1","rateLimitId":"p","__proto__":{"isAdmin":true}}');
      expectError(polluting, 400, 'validation_failed');
      expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    });
  });

  describe('routes and methods', () => {
    it.each([
      ['get', '/consumer-api-key/create', 'POST'],
      ['put', '/consumer-api-key/create', 'POST'],
      ['post', '/consumer-api-key', 'GET, HEAD'],
      ['delete', '/consumer-api-key', 'GET, HEAD'],
      ['put', '/consumer-api-key/key_x', 'GET, HEAD, PATCH, DELETE'],
      ['post', '/consumer-api-key/key_x', 'GET, HEAD, PATCH, DELETE'],
      ['get', '/consumer-api-key/key_x/roll', 'POST'],
      ['post', '/rate-limit', 'GET, HEAD'],
      ['put', '/rate-limit/gold', 'GET, HEAD, PATCH, DELETE'],
      ['get', '/api-keys/remove-rate-limit', 'POST'],
      ['get', '/rate-limit/create', 'POST'],
      ['delete', '/api-keys/apply-rate-limit', 'POST'],
      ['options', '/api-keys/apply-rate-limit', 'POST'],
    ])('%s %s: 405 method_not_allowed with Allow: %s', async (method, path, allow) => {
      const res = await (request(app) as unknown as Record<string, (p: string) => request.Test>)[method]!(
        path,
      ).set(AUTH);
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe(allow);
      if (method !== 'options') expect(res.body).toMatchObject({ code: 'method_not_allowed' });
    });

    it.each([
      ['/consumer-api-key/key_x/usage/extra'],
      ['/rate-limit/gold/extra'],
      ['/rate-limit/create/extra'],
      ['/Consumer-Api-Key'],
      ['/'],
    ])('GET %s: 404 not_found as JSON', async (path) => {
      expectError(await get(path), 404, 'not_found');
    });

    it('serves the routes under MANAGEMENT_PREFIX, and only there', async () => {
      const prefixed = createManagementApp({ ...deps, prefix: '/admin' });
      const created = await post('/admin/consumer-api-key/create', { name: 'prefixed' }, prefixed);
      expect(created.status).toBe(201);
      secrets.push(created.body.secret);
      expect(created.headers.location).toBe(`/admin/consumer-api-key/${created.body.id}`);
      expect((await get(created.headers.location!, prefixed)).status).toBe(200);
      expectError(await post('/consumer-api-key/create', { name: 'unprefixed' }, prefixed), 404, 'not_found');
    });
  });

  describe('operations', () => {
    it('counts responses by status in tollgate_management_requests_total', async () => {
      await get('/consumer-api-key');
      await request(app).get('/consumer-api-key');
      const text = await deps.metrics.registry.getSingleMetricAsString('tollgate_management_requests_total');
      expect(text).toMatch(/tollgate_management_requests_total\{status="200"\} [1-9]/);
      expect(text).toMatch(/tollgate_management_requests_total\{status="401"\} [1-9]/);
      expect(text).toMatch(/tollgate_management_requests_total\{status="201"\} [1-9]/);
    });

    it('answers 503 database_unavailable, not 500, while the database is gone', async () => {
      const gone = await BACKENDS[kind]();
      await migrate(gone.handle);
      await gone.dispose();
      const down = createManagementApp({
        ...deps,
        ...storeDeps(gone.handle.db),
      });
      expectError(
        documented('get', '/consumer-api-key', await get('/consumer-api-key', down)),
        503,
        'database_unavailable',
      );
      expectError(await post('/consumer-api-key/create', { name: 'x' }, down), 503, 'database_unavailable');
      expectError(
        await post('/rate-limit/create', { rateLimitId: 'x', limit: 1, period: 'day' }, down),
        503,
        'database_unavailable',
      );
    });

    it('never logs a secret or the root token', () => {
      expect(secrets.length).toBeGreaterThan(5);
      const log = logLines.join('');
      expect(log).not.toContain(ROOT_TOKEN);
      for (const secret of secrets) expect(log).not.toContain(secret);
    });
  });
});

describe('management API on an unreachable Postgres server', () => {
  it('answers 503 database_unavailable when the connection is refused', async () => {
    const handle = await openPostgres('postgres://postgres@127.0.0.1:1/none');
    const limiter = new MemoryRateLimiter();
    try {
      const app = createManagementApp(managementDeps(handle.db, { limiter, rootToken: ROOT_TOKEN, logger }));
      expectError(await request(app).get('/consumer-api-key/key_abc').set(AUTH), 503, 'database_unavailable');
      expectError(
        await request(app).delete('/consumer-api-key/key_abc').set(AUTH),
        503,
        'database_unavailable',
      );
    } finally {
      await limiter.close();
      await handle.close();
    }
  });
});
