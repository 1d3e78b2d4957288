/**
 * Plans with several limits (docs/guides/plans.md) through the management API in process, over the
 * embedded store and a real Postgres; every documented response is checked against the OpenAPI document.
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
/** Saturday 2026-11-21 14:23:02.400 UTC. */
const START = Date.UTC(2026, 10, 21, 14, 23, 2, 400);
const PLAN = '/rate-limit/{rateLimitId}';
const logger = createLogger('silent');

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

function documented(method: 'get' | 'post' | 'patch', template: string, res: Response): Response {
  expect(checker.problems(method, template, res)).toEqual([]);
  return res;
}

function expectInvalid(res: Response, fields: string[]): void {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ code: 'validation_failed' });
  expect(res.body.details.map((d: { field: string }) => d.field).sort()).toEqual([...fields].sort());
}

const BURST_AND_QUOTA = [
  { name: 'burst', limit: 10, period: 'second' },
  { name: 'monthly-quota', limit: 10_000, period: 'month' },
] as const;

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'plans with several limits on %s storage',
  (kind) => {
    let storage: Storage;
    let app: Express;
    let keys: KeyRepository;
    let limiter: MemoryRateLimiter;
    let now = START;
    const events: KeyChange[] = [];

    beforeAll(async () => {
      storage = await STORAGES[kind]();
      await migrate(storage.handle);
      const metrics = new Metrics();
      const usageRepository = new UsageRepository(storage.handle.db);
      const recorder = new UsageRecorder(new DatabaseUsageSink(usageRepository), logger, metrics);
      limiter = new MemoryRateLimiter();
      keys = new KeyRepository(storage.handle.db);
      const keyEvents = new LocalKeyEvents();
      keyEvents.subscribe((change) => events.push(change));
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

    const post = (path: string, body: unknown) =>
      request(app)
        .post(path)
        .set(AUTH)
        .send(body as object);
    const patch = (path: string, body: unknown) =>
      request(app)
        .patch(path)
        .set(AUTH)
        .send(body as object);
    const get = (path: string) => request(app).get(path).set(AUTH);
    const newId = () => 'plan-' + randomBytes(5).toString('hex');

    it('creates a plan of a burst limit and a monthly quota: both shapes in the answer, defaults filled in', async () => {
      const rateLimitId = newId();
      const res = documented(
        'post',
        '/rate-limit/create',
        await post('/rate-limit/create', {
          rateLimitId,
          description: 'burst and quota',
          limits: BURST_AND_QUOTA,
        }),
      );
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        rateLimitId,
        description: 'burst and quota',
        limit: 10,
        period: 'second',
        createdAt: '2026-11-21T14:23:02Z',
        limits: [
          { name: 'burst', limit: 10, period: 'second', algorithm: 'fixed', per: 'key' },
          { name: 'monthly-quota', limit: 10_000, period: 'month', algorithm: 'fixed', per: 'key' },
        ],
        lastUpdated: '2026-11-21T14:23:02Z',
        keyCount: 0,
        consumerCount: 0,
        costs: [],
        unit: 'requests',
      });
      expect(documented('get', PLAN, await get(`/rate-limit/${rateLimitId}`)).body).toEqual(res.body);
      const listed = documented('get', '/rate-limit', await get('/rate-limit?limit=1000')).body.rateLimits;
      expect(listed.find((p: { rateLimitId: string }) => p.rateLimitId === rateLimitId)).toEqual(res.body);
    });

    it('names a limit after its period by default, takes year and sliding', async () => {
      const rateLimitId = newId();
      const res = documented(
        'post',
        '/rate-limit/create',
        await post('/rate-limit/create', {
          rateLimitId,
          limits: [
            { limit: 100, period: 'minute', algorithm: 'sliding' },
            { limit: 1_000_000, period: 'year' },
          ],
        }),
      );
      expect(res.body.limits).toEqual([
        { name: 'minute', limit: 100, period: 'minute', algorithm: 'sliding', per: 'key' },
        { name: 'year', limit: 1_000_000, period: 'year', algorithm: 'fixed', per: 'key' },
      ]);
      expect(res.body).toMatchObject({ limit: 100, period: 'minute' });
      // The seed's body takes a year too.
      expect(
        (await post('/rate-limit/create', { rateLimitId: newId(), limit: 5, period: 'year' })).body.limits,
      ).toEqual([{ name: 'year', limit: 5, period: 'year', algorithm: 'fixed', per: 'key' }]);
    });

    const limitsOf = (...periods: string[]) => periods.map((period) => ({ limit: 1, period }));
    it.each([
      ['both shapes', { limit: 1, period: 'hour', limits: limitsOf('hour') }, ['limits']],
      ['neither shape', {}, ['limit', 'period']],
      ['only a limit', { limit: 5 }, ['period']],
      ['an empty list', { limits: [] }, ['limits']],
      ['five limits', { limits: limitsOf('second', 'minute', 'hour', 'day', 'week') }, ['limits']],
      [
        'a repeated name',
        {
          limits: [
            { limit: 1, period: 'hour', name: 'x' },
            { limit: 2, period: 'day', name: 'x' },
          ],
        },
        ['limits.1.name'],
      ],
      [
        'a name repeated by default',
        {
          limits: [
            { limit: 1, period: 'hour', name: 'day' },
            { limit: 2, period: 'day' },
          ],
        },
        ['limits.1.name'],
      ],
      [
        'a repeated period and algorithm',
        {
          limits: [
            { limit: 1, period: 'hour', name: 'a' },
            { limit: 2, period: 'hour', name: 'b' },
          ],
        },
        ['limits.1'],
      ],
      ['a name with a space', { limits: [{ limit: 1, period: 'hour', name: 'a b' }] }, ['limits.0.name']],
      [
        'a 33-character name',
        { limits: [{ limit: 1, period: 'hour', name: 'n'.repeat(33) }] },
        ['limits.0.name'],
      ],
      [
        'an unknown algorithm',
        { limits: [{ limit: 1, period: 'hour', algorithm: 'leaky' }] },
        ['limits.0.algorithm'],
      ],
      [
        'an unknown field in a limit',
        { limits: [{ limit: 1, period: 'hour', burst: 2 }] },
        ['limits.0.burst'],
      ],
      ['limit 0 in a limit', { limits: [{ limit: 0, period: 'hour' }] }, ['limits.0.limit']],
      [
        'a burst on a sliding limit',
        { limits: [{ limit: 1, period: 'hour', algorithm: 'sliding', burst: 2 }] },
        ['limits.0.burst'],
      ],
      [
        'a burst on a concurrency limit',
        { limits: [{ limit: 1, algorithm: 'concurrency', burst: 2 }] },
        ['limits.0.burst'],
      ],
    ])('refuses %s: 400 validation_failed naming each field', async (_label, body, fields) => {
      const res = documented(
        'post',
        '/rate-limit/create',
        await post('/rate-limit/create', { rateLimitId: newId(), ...body }),
      );
      expectInvalid(res, fields);
    });

    it('allows a fixed and a sliding limit of the same period', async () => {
      const res = await post('/rate-limit/create', {
        rateLimitId: newId(),
        limits: [
          { limit: 100, period: 'hour', name: 'hourly' },
          { limit: 80, period: 'hour', name: 'rolling-hour', algorithm: 'sliding' },
        ],
      });
      expect(res.status).toBe(201);
    });

    it('tells limits of one period and algorithm apart by per, concurrency limits (no period) too', async () => {
      const limits = [
        { name: 'all', limit: 10, algorithm: 'concurrency' },
        { name: 'each', limit: 2, algorithm: 'concurrency', per: 'customer' },
        { name: 'bursts', limit: 5, period: 'second', algorithm: 'tokenBucket', per: 'clientAddress' },
        { name: 'steady', limit: 50, period: 'second', algorithm: 'tokenBucket', burst: 100 },
      ];
      const res = await post('/rate-limit/create', { rateLimitId: newId(), limits });
      expect(res.status).toBe(201);
      expect(res.body.limits).toEqual([
        { name: 'all', limit: 10, period: null, algorithm: 'concurrency', per: 'key' },
        { name: 'each', limit: 2, period: null, algorithm: 'concurrency', per: 'customer' },
        {
          name: 'bursts',
          limit: 5,
          period: 'second',
          algorithm: 'tokenBucket',
          burst: 5,
          per: 'clientAddress',
        },
        { name: 'steady', limit: 50, period: 'second', algorithm: 'tokenBucket', burst: 100, per: 'key' },
      ]);
      const same = await post('/rate-limit/create', {
        rateLimitId: newId(),
        limits: [limits[1], { ...limits[1], name: 'other', limit: 3 }],
      });
      expectInvalid(same, ['limits.1']);
      expect(same.body.details).toEqual([
        {
          field: 'limits.1',
          message:
            'repeats the period, algorithm and per of another limit without a match (none, concurrency, customer)',
        },
      ]);
      // A plan of one limit changed by its number keeps whom it counts for.
      const rateLimitId = newId();
      await post('/rate-limit/create', { rateLimitId, limits: [limits[1]] });
      expect((await patch(`/rate-limit/${rateLimitId}`, { limit: 4 })).body.limits).toEqual([
        { name: 'each', limit: 4, period: null, algorithm: 'concurrency', per: 'customer' },
      ]);
    });

    it('replaces every limit with PATCH limits; limit and period change only a plan of one limit', async () => {
      const rateLimitId = newId();
      await post('/rate-limit/create', { rateLimitId, limit: 60, period: 'minute' });
      const two = documented(
        'patch',
        PLAN,
        await patch(`/rate-limit/${rateLimitId}`, { limits: BURST_AND_QUOTA }),
      );
      expect(two.status).toBe(200);
      expect(two.body).toMatchObject({
        limit: 10,
        period: 'second',
        limits: [{ name: 'burst' }, { name: 'monthly-quota' }],
      });
      expectInvalid(documented('patch', PLAN, await patch(`/rate-limit/${rateLimitId}`, { limit: 5 })), [
        'limit',
      ]);
      expectInvalid(
        documented(
          'patch',
          PLAN,
          await patch(`/rate-limit/${rateLimitId}`, { limit: 5, limits: BURST_AND_QUOTA }),
        ),
        ['limits'],
      );
      // Back to one limit; a named limit keeps its name and algorithm when only its number changes.
      await patch(`/rate-limit/${rateLimitId}`, {
        limits: [{ name: 'rolling', limit: 50, period: 'hour', algorithm: 'sliding', per: 'key' }],
      });
      const one = documented('patch', PLAN, await patch(`/rate-limit/${rateLimitId}`, { limit: 70 }));
      expect(one.body.limits).toEqual([
        { name: 'rolling', limit: 70, period: 'hour', algorithm: 'sliding', per: 'key' },
      ]);
      // A limit named after its period follows a new period.
      await patch(`/rate-limit/${rateLimitId}`, { limits: [{ limit: 50, period: 'hour' }] });
      expect((await patch(`/rate-limit/${rateLimitId}`, { period: 'day' })).body.limits).toEqual([
        { name: 'day', limit: 50, period: 'day', algorithm: 'fixed', per: 'key' },
      ]);
    });

    it('gives the proxy every limit of a bound plan', async () => {
      const rateLimitId = newId();
      await post('/rate-limit/create', { rateLimitId, limits: BURST_AND_QUOTA });
      const key = await post('/consumer-api-key/create', { name: 'two limits', rateLimitId });
      expect(key.status).toBe(201);
      expect((await keys.findBySecretHash(hashSecret(key.body.secret)))?.limits).toEqual(
        plan(...BURST_AND_QUOTA).limits,
      );
    });

    it('shows every limit of the key’s plan in usage.rateLimits, the seed’s fields for the one with the fewest left', async () => {
      const rateLimitId = newId();
      await post('/rate-limit/create', {
        rateLimitId,
        limits: [
          { name: 'burst', limit: 10, period: 'second' },
          { name: 'daily', limit: 12, period: 'day' },
        ],
      });
      const key = (await post('/consumer-api-key/create', { name: 'limited', rateLimitId })).body;
      const limits = plan(
        { name: 'burst', limit: 10, period: 'second' },
        { name: 'daily', limit: 12, period: 'day' },
      );
      for (let i = 0; i < 4; i++) expect(limiter.consume(keyOnly(key.id, limits), 1, now).allowed).toBe(true);
      // 6 left of the burst, 8 of the day: the burst is reported.
      const detail = documented(
        'get',
        '/consumer-api-key/{consumerApiKeyId}',
        await get(`/consumer-api-key/${key.id}`),
      );
      expect(detail.body.usage.rateLimits).toEqual({
        limit: 10,
        remaining: 6,
        resetTime: '2026-11-21T14:23:03Z',
        limits: [
          {
            name: 'burst',
            limit: 10,
            period: 'second',
            remaining: 6,
            resetTime: '2026-11-21T14:23:03Z',
            scope: 'key',
            per: 'key',
          },
          {
            name: 'daily',
            limit: 12,
            period: 'day',
            remaining: 8,
            resetTime: '2026-11-22T00:00:00Z',
            scope: 'key',
            per: 'key',
          },
        ],
      });
    });

    it('records nothing and tells no cache when a change sets what the plan already has', async () => {
      const rateLimitId = newId();
      await post('/rate-limit/create', { rateLimitId, description: 'same', limits: BURST_AND_QUOTA });
      const entries = async () =>
        (await get(`/tollgate/audit-log?targetId=${rateLimitId}`)).body.auditLog.length;
      expect(await entries()).toBe(1);
      events.length = 0;
      now = START + 60_000;
      for (const body of [
        { description: 'same' },
        { limits: BURST_AND_QUOTA },
        { limits: BURST_AND_QUOTA.map((l) => ({ ...l, algorithm: 'fixed' })), description: 'same' },
      ]) {
        const res = documented('patch', PLAN, await patch(`/rate-limit/${rateLimitId}`, body));
        expect(res.status).toBe(200);
        expect(res.body.lastUpdated).toBe('2026-11-21T14:23:02Z');
      }
      expect(await entries()).toBe(1);
      expect(events).toEqual([]);
      // A limit that differs is a change: recorded, announced, lastUpdated moves.
      const changed = await patch(`/rate-limit/${rateLimitId}`, {
        limits: [BURST_AND_QUOTA[0], { ...BURST_AND_QUOTA[1], limit: 20_000 }],
      });
      expect(changed.body.lastUpdated).toBe('2026-11-21T14:24:02Z');
      expect(await entries()).toBe(2);
      expect(events).toEqual([{ kind: 'plan', rateLimitId }]);
      now = START;
    });

    describe('limits that match requests, costs and allowed routes', () => {
      beforeAll(async () => {
        for (const routeId of ['search', 'lookup'])
          expect(
            (
              await post('/tollgate/routes', {
                routeId,
                match: { pathPrefix: `/v1/${routeId}` },
                upstreamUrl: 'http://127.0.0.1:9/',
              })
            ).status,
          ).toBe(201);
      });

      it('keeps a limit’s match and the plan’s costs, shows and audits them, and changes them with PATCH', async () => {
        const rateLimitId = newId();
        const limits = [
          { name: 'searches', limit: 100, period: 'minute', match: { routeIds: ['search'] } },
          {
            name: 'writes',
            limit: 10,
            period: 'minute',
            match: { methods: ['POST', 'PUT'], pathPrefix: '/v1', caseInsensitive: true },
          },
          { name: 'all', limit: 1000, period: 'minute' },
        ];
        const costs = [
          { match: { routeIds: ['search'] }, cost: 5 },
          { match: { pathPrefix: '/v1/lookup', methods: ['GET'] }, cost: 1 },
        ];
        const created = documented(
          'post',
          '/rate-limit/create',
          await post('/rate-limit/create', { rateLimitId, limits, costs }),
        );
        expect(created.status).toBe(201);
        expect(created.body.limits).toEqual(limits.map((l) => ({ ...l, algorithm: 'fixed', per: 'key' })));
        expect(created.body.costs).toEqual(costs);
        expect(documented('get', PLAN, await get(`/rate-limit/${rateLimitId}`)).body).toEqual(created.body);
        const [entry] = (await get(`/tollgate/audit-log?targetId=${rateLimitId}`)).body.auditLog;
        // The audit keeps the limits as stored: a limit of the whole key without its default `per`.
        expect(entry.changes.after).toMatchObject({
          costs,
          limits: created.body.limits.map(({ per: _, ...stored }: { per: string }) => stored),
        });

        const changed = documented(
          'patch',
          PLAN,
          await patch(`/rate-limit/${rateLimitId}`, {
            costs: [{ match: { methods: ['DELETE'] }, cost: 10_000 }],
          }),
        );
        expect(changed.body.costs).toEqual([{ match: { methods: ['DELETE'] }, cost: 10_000 }]);
        expect(changed.body.limits).toEqual(created.body.limits);
        events.length = 0;
        expect((await patch(`/rate-limit/${rateLimitId}`, { costs: [] })).body.costs).toEqual([]);
        expect(events).toEqual([{ kind: 'plan', rateLimitId }]);
      });

      it('refuses a cost outside 1-10,000, an empty match, an unknown route id, a dot segment and caseInsensitive without a prefix, naming each field', async () => {
        const limit = { limit: 10, period: 'minute' };
        expectInvalid(
          await post('/rate-limit/create', {
            rateLimitId: newId(),
            limits: [limit],
            costs: [
              { match: { routeIds: ['search'] }, cost: 0 },
              { match: { routeIds: ['search'] }, cost: 10_001 },
              { match: {}, cost: 2 },
            ],
          }),
          ['costs.0.cost', 'costs.1.cost', 'costs.2.match'],
        );
        expectInvalid(
          await post('/rate-limit/create', {
            rateLimitId: newId(),
            limits: [{ ...limit, match: { routeIds: ['search', 'nowhere'] } }],
            costs: [{ match: { routeIds: ['gone'] }, cost: 2 }],
          }),
          ['limits.0.match.routeIds.1', 'costs.0.match.routeIds.0'],
        );
        expectInvalid(
          await post('/rate-limit/create', {
            rateLimitId: newId(),
            limits: [{ ...limit, match: { pathPrefix: '/v1/../admin' } }],
            // caseInsensitive qualifies a prefix: alone it would match every request.
            costs: [{ match: { caseInsensitive: true }, cost: 2 }],
          }),
          ['limits.0.match.pathPrefix', 'costs.0.match.caseInsensitive'],
        );
        const rateLimitId = newId();
        await post('/rate-limit/create', { rateLimitId, limits: [limit] });
        expectInvalid(
          await patch(`/rate-limit/${rateLimitId}`, {
            costs: [{ match: { routeIds: ['nowhere'] }, cost: 3 }],
          }),
          ['costs.0.match.routeIds.0'],
        );
      });

      it('takes two limits of one period and algorithm when a match tells them apart, not otherwise', async () => {
        const ok = await post('/rate-limit/create', {
          rateLimitId: newId(),
          limits: [
            { name: 'searches', limit: 10, period: 'minute', match: { routeIds: ['search'] } },
            { name: 'lookups', limit: 10, period: 'minute', match: { routeIds: ['lookup'] } },
            { name: 'all', limit: 15, period: 'minute' },
          ],
        });
        expect(ok.status).toBe(201);
        expectInvalid(
          await post('/rate-limit/create', {
            rateLimitId: newId(),
            limits: [
              { name: 'a', limit: 10, period: 'minute' },
              { name: 'b', limit: 15, period: 'minute' },
            ],
          }),
          ['limits.1'],
        );
      });

      it('keeps a key’s allowed routes through create, PATCH and the detail; refuses unknown route ids', async () => {
        const created = await post('/consumer-api-key/create', {
          name: 'search only',
          allowedRouteIds: ['search'],
        });
        expect(created.status).toBe(201);
        expect(created.body.allowedRouteIds).toEqual(['search']);
        const path = `/consumer-api-key/${created.body.id}`;
        expect((await get(path)).body.allowedRouteIds).toEqual(['search']);
        expect((await patch(path, { allowedRouteIds: ['search', 'lookup'] })).body.allowedRouteIds).toEqual([
          'search',
          'lookup',
        ]);
        expect((await patch(path, { allowedRouteIds: null })).body.allowedRouteIds).toBeNull();
        expectInvalid(await patch(path, { allowedRouteIds: ['search', 'nowhere'] }), ['allowedRouteIds.1']);
        expectInvalid(await post('/consumer-api-key/create', { name: 'x', allowedRouteIds: ['nowhere'] }), [
          'allowedRouteIds.0',
        ]);
        const trail = (await get(`/tollgate/audit-log?targetId=${created.body.id}`)).body.auditLog;
        expect(
          trail.map(
            (e: { changes: { after: { allowedRouteIds: unknown } } }) => e.changes.after.allowedRouteIds,
          ),
        ).toEqual([null, ['search', 'lookup'], ['search']]);
      });
    });
  },
);
