/**
 * The operations list is the one definition of the management API: these tests walk every operation and
 * check that the OpenAPI document, the validators and the routes say the same, and that every parameter
 * the document names is checked (a bad value is a 400 `validation_failed` naming it).
 */
import { randomBytes } from 'node:crypto';
import type { TObject, TSchema } from '@sinclair/typebox';
import type { Express } from 'express';
import request from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { buildOpenApiDocument, openApiPath } from '../../src/management/openapi.js';
import type { Operation } from '../../src/management/operation.js';
import { OPERATIONS } from '../../src/management/resources/index.js';
import { allowedMethods } from '../../src/management/register-operations.js';
import { isManagementPath } from '../../src/server.js';
import { migrate } from '../../src/store/migrate.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const document = buildOpenApiDocument();
type Item = Record<
  string,
  {
    parameters?: { name: string; in: string; schema: object }[];
    requestBody?: unknown;
    'x-required-scope'?: string;
    operationId: string;
  }
>;

/** A path of the operation with a well-formed value in each parameter. */
function samplePath(operation: Operation): string {
  const samples: Record<string, string> = {
    consumerApiKeyId: 'key_sample',
    rateLimitId: 'plan-sample',
    tokenId: 'tok_' + 'A'.repeat(22),
    consumerId: 'con_' + 'A'.repeat(22),
    billingExportId: 'bex_' + 'A'.repeat(22),
    webhookId: 'whk_' + 'A'.repeat(22),
    deliveryId: 'dlv_' + 'A'.repeat(22),
  };
  return operation.path.replace(/:([A-Za-z]+)/g, (_all, name: string) => samples[name] ?? 'sample');
}

/** A value the schema refuses, sent as a query string or in a JSON body; undefined: the schema accepts every value of its type. */
function badValue(schema: TSchema, where: 'query' | 'body'): unknown {
  const s = schema as {
    type?: string;
    enum?: unknown[];
    pattern?: string;
    maxLength?: number;
    minLength?: number;
    anyOf?: TSchema[];
    minimum?: number;
  };
  if (where === 'body') return s.type === 'array' ? 'not-a-list' : [['not', 'this']];
  if (s.type === 'integer' || s.type === 'number') return 'x';
  if (s.type === 'boolean') return 'maybe';
  if (s.enum) return 'not-one-of-them';
  if (s.pattern) return 'a\u0000b';
  if (s.maxLength !== undefined) return 'x'.repeat(s.maxLength + 1);
  return undefined;
}

/** Query parameters whose bad values have a code of their own. */
const OWN_CODES: Record<string, string> = { cursor: 'invalid_cursor' };

describe('the operations list', () => {
  it('gives every operation one place in the document, with its scope, parameters and body', () => {
    for (const operation of OPERATIONS) {
      const item = (document.paths[openApiPath(operation.path)] as Item | undefined)?.[operation.method];
      expect(item).toBeDefined();
      expect(item!.operationId).toBe(operation.id);
      expect(item!['x-required-scope']).toBe(operation.scope ?? undefined);
      const documented = (item!.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort();
      const declared = [
        ...Object.keys(operation.params?.schema.properties ?? {}).map((name) => `path:${name}`),
        ...Object.keys(operation.query?.schema.properties ?? {}).map((name) => `query:${name}`),
      ].sort();
      expect(documented).toEqual(declared);
      expect(item!.requestBody !== undefined).toBe(operation.body !== undefined);
    }
    const documentedOperations = Object.values(document.paths).flatMap((item) =>
      Object.keys(item).filter((k) => ['get', 'post', 'patch', 'delete'].includes(k)),
    );
    expect(documentedOperations).toHaveLength(OPERATIONS.length);
    expect(new Set(OPERATIONS.map((op) => op.id)).size).toBe(OPERATIONS.length);
  });

  it('documents each parameter with the schema its validator compiles', () => {
    for (const operation of OPERATIONS) {
      const item = (document.paths[openApiPath(operation.path)] as Item)[operation.method]!;
      for (const [where, spec] of [
        ['path', operation.params?.schema],
        ['query', operation.query?.schema],
      ] as const) {
        for (const [name, property] of Object.entries((spec as TObject | undefined)?.properties ?? {})) {
          const { description: _description, ...schema } = JSON.parse(JSON.stringify(property)) as Record<
            string,
            unknown
          >;
          expect(item.parameters!.find((p) => p.in === where && p.name === name)!.schema).toEqual(schema);
        }
      }
    }
  });

  it('routes every path to the management API and nothing near it', () => {
    for (const operation of OPERATIONS) {
      expect(isManagementPath(samplePath(operation), '')).toBe(true);
      expect(isManagementPath(samplePath(operation), '/admin')).toBe(false);
      expect(isManagementPath('/admin' + samplePath(operation), '/admin')).toBe(true);
      // Everything under /tollgate/ is the management API's; elsewhere only the exact paths are.
      if (operation.path.startsWith('/tollgate/')) continue;
      expect(isManagementPath(samplePath(operation) + '/', '')).toBe(false);
      expect(isManagementPath(samplePath(operation).toUpperCase(), '')).toBe(false);
    }
  });
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'the operations over %s storage',
  (kind) => {
    let storage: Storage;
    let app: Express;
    beforeAll(async () => {
      storage = await STORAGES[kind]();
      await migrate(storage.handle);
      app = createManagementApp(managementDeps(storage.handle.db, { rootToken: ROOT_TOKEN }));
    });
    afterAll(() => storage.dispose());

    const paths = [...new Set(OPERATIONS.map((op) => op.path))];
    it.each(paths)(
      '%s answers 405 to the methods the document leaves out, with the Allow it documents',
      async (path) => {
        const here = OPERATIONS.filter((op) => op.path === path);
        const documented = Object.keys(document.paths[openApiPath(path)]!).map((m) => m.toUpperCase());
        expect(documented.sort()).toEqual(here.map((op) => op.method.toUpperCase()).sort());
        for (const method of ['get', 'post', 'patch', 'delete', 'put'] as const) {
          if (here.some((op) => op.method === method)) continue;
          const agent = request(app);
          const res = await agent[method](samplePath(here[0]!)).set('Authorization', `Bearer ${ROOT_TOKEN}`);
          expect(res.status).toBe(405);
          expect(res.body.code).toBe('method_not_allowed');
          expect(res.headers.allow).toBe(allowedMethods(here));
        }
      },
    );

    const queryParameters = OPERATIONS.flatMap((op) =>
      Object.entries(op.query?.schema.properties ?? {}).map(
        ([name, schema]) => [op.id, name, op, schema as TSchema] as const,
      ),
    );
    it.each(queryParameters)(
      '%s: a bad query parameter %s is refused naming it',
      async (_id, name, operation, schema) => {
        const value = badValue(schema, 'query');
        const code = OWN_CODES[name];
        const sent = value ?? 'not-issued-here';
        expect(value !== undefined || code !== undefined).toBe(true);
        const agent = request(app);
        const res = await agent[operation.method](samplePath(operation))
          .query({ [name]: sent })
          .set('Authorization', `Bearer ${ROOT_TOKEN}`);
        expect(res.status).toBe(400);
        if (code !== undefined) {
          expect(res.body.code).toBe(code);
        } else {
          expect(res.body.code).toBe('validation_failed');
          expect(res.body.details).toContainEqual(expect.objectContaining({ field: name }));
        }
      },
    );

    it.each(OPERATIONS.filter((op) => op.query))(
      '%s: an unknown query parameter is refused naming it',
      async (operation) => {
        const agent = request(app);
        const res = await agent[operation.method](samplePath(operation))
          .query({ notAParameter: '1' })
          .set('Authorization', `Bearer ${ROOT_TOKEN}`);
        expect(res.status).toBe(400);
        expect(res.body.details).toContainEqual(expect.objectContaining({ field: 'notAParameter' }));
      },
    );

    const bodyFields = OPERATIONS.flatMap((op) =>
      Object.entries(op.body?.schema.properties ?? {}).map(
        ([name, schema]) => [op.id, name, op, schema as TSchema] as const,
      ),
    );
    it.each(bodyFields)(
      '%s: a bad body field %s is refused naming it',
      async (_id, name, operation, schema) => {
        const agent = request(app);
        const res = await agent[operation.method](samplePath(operation))
          .set('Authorization', `Bearer ${ROOT_TOKEN}`)
          .send({ [name]: badValue(schema, 'body') });
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('validation_failed');
        expect(res.body.details).toContainEqual(expect.objectContaining({ field: name }));
      },
    );

    it.each(OPERATIONS.filter((op) => op.params))(
      '%s: a path value its schema refuses is the documented 404',
      async (operation) => {
        const agent = request(app);
        const res = await agent[operation.method](
          operation.path.replace(/:([A-Za-z]+)/g, 'bad%20value%00'),
        ).set('Authorization', `Bearer ${ROOT_TOKEN}`);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe(operation.params!.notFound);
        const documented = (
          document.paths[openApiPath(operation.path)] as Record<
            string,
            { responses: Record<string, { content: Record<string, { examples: object }> }> }
          >
        )[operation.method]!;
        expect(Object.keys(documented.responses['404']!.content['application/json']!.examples)).toContain(
          operation.params!.notFound,
        );
      },
    );
  },
);
