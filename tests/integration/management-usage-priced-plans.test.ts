/**
 * Plans of usage-priced APIs (docs/guides/usage-priced-apis.md) through the management API in process,
 * over the embedded store and a real Postgres: a cost the backend reports (`settle`, `reserve`,
 * `settleMax`), a match on the request's JSON body and the plan's unit are kept, shown as the OpenAPI
 * document says, changed with PATCH, and refused with the field named when malformed.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request, { type Response } from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { migrate } from '../../src/store/migrate.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
const PLAN = '/rate-limit/{rateLimitId}';
const TOKENS_PER_MINUTE = { name: 'tokens', limit: 100_000, period: 'minute' };

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
  expect([...new Set(res.body.details.map((d: { field: string }) => d.field))].sort()).toEqual(
    [...fields].sort(),
  );
}

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'usage-priced plans on %s storage',
  (kind) => {
    let storage: Storage;
    let app: Express;

    beforeAll(async () => {
      storage = await STORAGES[kind]();
      await migrate(storage.handle);
      app = createManagementApp(
        managementDeps(storage.handle.db, { rootToken: ROOT_TOKEN, logger: createLogger('silent') }),
      );
    }, 60_000);

    afterAll(() => storage.dispose());

    const post = (body: object) => request(app).post('/rate-limit/create').set(AUTH).send(body);
    const patch = (id: string, body: object) => request(app).patch(`/rate-limit/${id}`).set(AUTH).send(body);
    const newId = () => 'plan-' + randomBytes(5).toString('hex');

    it('keeps costs the backend reports, a per-model limit and the unit; shows, audits and changes them', async () => {
      const rateLimitId = newId();
      const gpt4o = { pointer: '/model', values: ['gpt-4o', 'gpt-4o-2024-08-06'] };
      const limits = [
        TOKENS_PER_MINUTE,
        { name: 'gpt-4o', limit: 20_000, period: 'minute', match: { body: gpt4o } },
      ];
      const costs = [
        {
          match: { pathPrefix: '/v1/chat/completions', body: gpt4o },
          reserve: { pointer: '/max_tokens', add: 1000, default: 4096 },
          settle: { preset: 'openai' },
          settleMax: 200_000,
        },
        { match: { pathPrefix: '/v1/messages' }, settle: { preset: 'anthropic' } },
        { match: { pathPrefix: '/v1/rows' }, cost: 10, settle: { header: 'x-rows-returned' } },
        {
          match: { pathPrefix: '/v1/embeddings' },
          settle: { json: ['/usage/prompt_tokens', '/usage/a~1b'] },
        },
        { match: { methods: ['DELETE'] }, cost: 3 },
      ];
      const created = documented(
        'post',
        '/rate-limit/create',
        await post({ rateLimitId, limits, costs, unit: 'tokens' }),
      );
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ costs, unit: 'tokens' });
      expect(created.body.limits[1]).toMatchObject({ match: { body: gpt4o } });
      const shown = documented('get', PLAN, await request(app).get(`/rate-limit/${rateLimitId}`).set(AUTH));
      expect(shown.body).toEqual(created.body);
      const [entry] = (await request(app).get(`/tollgate/audit-log?targetId=${rateLimitId}`).set(AUTH)).body
        .auditLog;
      expect(entry.changes.after).toMatchObject({ costs, unit: 'tokens' });

      const renamed = documented('patch', PLAN, await patch(rateLimitId, { unit: 'rows returned' }));
      expect(renamed.body).toMatchObject({ unit: 'rows returned', costs });
      const back = documented('patch', PLAN, await patch(rateLimitId, { unit: 'requests', costs: [] }));
      expect(back.body).toMatchObject({ unit: 'requests', costs: [] });
    });

    it('counts requests when a plan names no unit', async () => {
      const res = documented(
        'post',
        '/rate-limit/create',
        await post({ rateLimitId: newId(), limit: 5, period: 'hour' }),
      );
      expect(res.body.unit).toBe('requests');
    });

    it('refuses a cost priced two ways or not at all, and reserve or settleMax without settle', async () => {
      const match = { pathPrefix: '/v1' };
      const settle = { preset: 'openai' };
      expectInvalid(
        await post({
          rateLimitId: newId(),
          limits: [TOKENS_PER_MINUTE],
          costs: [
            { match },
            { match, cost: 2, reserve: { pointer: '/max_tokens', default: 10 } },
            { match, cost: 2, settleMax: 10 },
            { match, cost: 2, reserve: { pointer: '/max_tokens', default: 10 }, settle },
          ],
        }),
        ['costs.0.cost', 'costs.1.reserve', 'costs.2.settleMax', 'costs.3.reserve'],
      );
    });

    it('refuses malformed settle rules, reservations, body matches and units, naming each field', async () => {
      const match = { pathPrefix: '/v1' };
      expectInvalid(
        await post({
          rateLimitId: newId(),
          limits: [{ ...TOKENS_PER_MINUTE, match: { body: { pointer: '/model', values: [] } } }],
          costs: [
            { match, settle: { json: ['/a', '/b', '/c', '/d', '/e'] } },
            { match, settle: { json: ['usage'] } },
            { match, settle: { preset: 'gemini' } },
            { match, settle: { header: 'x units' } },
            { match, settle: { header: 'x-units', json: ['/a'] } },
            { match, settle: { preset: 'openai' }, settleMax: 0 },
            { match, settle: { preset: 'openai' }, reserve: { pointer: '/max_tokens~2', default: 1 } },
            { match, settle: { preset: 'openai' }, reserve: { pointer: '/max_tokens', add: -1, default: 0 } },
            { match: { body: { pointer: '/model', values: ['a', 'a'] } }, cost: 1 },
          ],
          unit: 'x'.repeat(33),
        }),
        [
          'limits.0.match.body.values',
          'costs.0.settle.json',
          'costs.1.settle.json.0',
          'costs.2.settle.preset',
          'costs.3.settle.header',
          'costs.4.settle',
          'costs.5.settleMax',
          'costs.6.reserve.pointer',
          'costs.7.reserve.add',
          'costs.7.reserve.default',
          'costs.8.match.body.values',
          'unit',
        ],
      );
      expectInvalid(await post({ rateLimitId: newId(), limit: 5, period: 'hour', unit: 'to\nkens' }), [
        'unit',
      ]);
    });
  },
);
