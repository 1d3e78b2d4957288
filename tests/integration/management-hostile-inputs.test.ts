/**
 * Management defects found by hostile probing, each as a user meets it, on both stores.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { migrate } from '../../src/store/migrate.js';
import type { Scope } from '../../src/management/scopes.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const KEY_PATH = '/consumer-api-key/{consumerApiKeyId}';

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'hostile management input on %s storage',
  (kind) => {
    let storage: Storage;
    let app: Express;
    let checker: OpenApiChecker;
    const logLines: string[] = [];
    beforeAll(async () => {
      checker = await OpenApiChecker.create();
      storage = await STORAGES[kind]();
      await migrate(storage.handle);
      const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });
      app = createManagementApp(managementDeps(storage.handle.db, { rootToken: ROOT_TOKEN, logger }));
    });
    afterAll(() => storage.dispose());

    const as = (token: string) => ({ Authorization: `Bearer ${token}` });
    async function createKey(body: object = { name: 'k' }): Promise<{ id: string; secret: string }> {
      const res = await request(app).post('/consumer-api-key/create').set(as(ROOT_TOKEN)).send(body);
      expect(res.status).toBe(201);
      return res.body;
    }
    async function token(scopes: Scope[]): Promise<string> {
      const res = await request(app)
        .post('/tollgate/admin-tokens')
        .set(as(ROOT_TOKEN))
        .send({ name: 't', scopes });
      expect(res.status).toBe(201);
      return res.body.secret;
    }

    it('refuses metadata nested 5,000 levels deep with 400 naming metadata, on create and PATCH, logging no error', async () => {
      const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
      const create = await request(app)
        .post('/consumer-api-key/create')
        .set(as(ROOT_TOKEN))
        .set('content-type', 'application/json')
        .send(`{"name":"deep","metadata":${deep}}`);
      expect(create.status).toBe(400);
      expect(create.body).toMatchObject({
        code: 'validation_failed',
        details: [{ field: 'metadata', message: 'must nest at most 32 levels deep' }],
      });
      const { id } = await createKey();
      const patch = await request(app)
        .patch(`/consumer-api-key/${id}`)
        .set(as(ROOT_TOKEN))
        .set('content-type', 'application/json')
        .send(`{"metadata":${deep}}`);
      expect(patch.status).toBe(400);
      expect(patch.body.details).toEqual([
        { field: 'metadata', message: 'must nest at most 32 levels deep' },
      ]);
      expect(logLines.filter((line) => /"level":(50|60)/.test(line))).toEqual([]);
      // 32 levels are still a record an owner may keep.
      const allowed = '{"a":'.repeat(31) + '1' + '}'.repeat(31);
      expect(
        (
          await request(app)
            .patch(`/consumer-api-key/${id}`)
            .set(as(ROOT_TOKEN))
            .set('content-type', 'application/json')
            .send(`{"metadata":${allowed}}`)
        ).status,
      ).toBe(200);
    });

    it.each(['targetId', 'action', 'actorId'])(
      'answers 400 validation_failed to NUL in the audit filter %s',
      async (filter) => {
        const res = await request(app).get(`/tollgate/audit-log?${filter}=a%00`).set(as(ROOT_TOKEN));
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          code: 'validation_failed',
          details: [expect.objectContaining({ field: filter })],
        });
      },
    );

    it.each([
      'text/csv; charset=utf-8',
      'text/csv;header=present',
      'application/json;q=0.5, text/csv;charset=UTF-8',
    ])('answers CSV to Accept: %s', async (accept) => {
      const { id } = await createKey();
      for (const path of [`/consumer-api-key/${id}/usage`, '/tollgate/usage']) {
        const res = await request(app).get(path).set(as(ROOT_TOKEN)).set('Accept', accept);
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
        expect(res.text.split('\r\n')[0]).toMatch(
          /^start,requests,successful,failed,rateLimited,averageResponseTimeMs,/,
        );
      }
    });

    it('answers JSON when JSON is preferred or nothing is said', async () => {
      for (const accept of ['application/json, text/csv;q=0.5', '*/*']) {
        const res = await request(app).get('/tollgate/usage').set(as(ROOT_TOKEN)).set('Accept', accept);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
      }
    });

    it('shows a secret only to callers holding keys:secrets; a roll answers the new one to any roller', async () => {
      const { id, secret } = await createKey({ name: 'same' });
      const writer = await token(['keys:write']);
      const reader = await token(['keys:read']);
      const secretsReader = await token(['keys:read', 'keys:secrets']);
      const secretsWriter = await token(['keys:write', 'keys:secrets']);
      const noOp = await request(app).patch(`/consumer-api-key/${id}`).set(as(writer)).send({ name: 'same' });
      expect(noOp.status).toBe(200);
      expect(noOp.body).not.toHaveProperty('secret');
      expect(checker.problems('patch', KEY_PATH, noOp)).toEqual([]);
      const renamed = await request(app)
        .patch(`/consumer-api-key/${id}`)
        .set(as(writer))
        .send({ name: 'renamed' });
      expect(renamed.body).not.toHaveProperty('secret');
      expect(
        (await request(app).patch(`/consumer-api-key/${id}`).set(as(secretsWriter)).send({ name: 'again' }))
          .body.secret,
      ).toBe(secret);
      const detail = await request(app).get(`/consumer-api-key/${id}`).set(as(reader));
      expect(detail.status).toBe(200);
      expect(detail.body).not.toHaveProperty('secret');
      expect(JSON.stringify(detail.body)).not.toContain(secret);
      expect(checker.problems('get', KEY_PATH, detail)).toEqual([]);
      expect((await request(app).get(`/consumer-api-key/${id}`).set(as(secretsReader))).body.secret).toBe(
        secret,
      );
      const roll = await request(app).post(`/consumer-api-key/${id}/roll`).set(as(writer)).send({});
      expect(roll.status).toBe(200);
      expect(roll.body.secret).toMatch(/^tg_/);
    });

    it('refuses a usage range whose buckets end beyond 9999-12-31T23:59:59Z, naming to', async () => {
      const res = await request(app)
        .get('/tollgate/usage?granularity=day&from=9999-12-31T00:00:00Z&to=9999-12-31T23:59:59Z')
        .set(as(ROOT_TOKEN));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'validation_failed',
        details: [expect.objectContaining({ field: 'to' })],
      });
      expect(res.text).not.toContain('+010000');
    });

    it('refuses a tampered audit cursor whose position is not a sequence number', async () => {
      await createKey();
      const page = await request(app).get('/tollgate/audit-log?limit=1').set(as(ROOT_TOKEN));
      const [, ms, seq] = Buffer.from(page.body.nextCursor as string, 'base64url')
        .toString('utf8')
        .split(':');
      const tampered = Buffer.from(`v2:${ms}:${seq}junk`, 'utf8').toString('base64url');
      const res = await request(app).get(`/tollgate/audit-log?cursor=${tampered}`).set(as(ROOT_TOKEN));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_cursor');
    });

    it('clears metadata to {} when PATCHed with null, and records the change', async () => {
      const { id } = await createKey({ name: 'm', metadata: { plan: 'gold' } });
      const res = await request(app)
        .patch(`/consumer-api-key/${id}`)
        .set(as(ROOT_TOKEN))
        .send({ metadata: null });
      expect(res.status).toBe(200);
      expect(res.body.metadata).toEqual({});
      const audit = await request(app)
        .get(`/tollgate/audit-log?targetId=${id}&action=key.update`)
        .set(as(ROOT_TOKEN));
      expect(audit.body.auditLog[0].changes).toMatchObject({
        before: { metadata: { plan: 'gold' } },
        after: { metadata: {} },
      });
    });
  },
);
