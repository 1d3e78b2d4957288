/**
 * The route table's calls (docs/guides/routes.md) through the management API in process, over the
 * embedded store and a real Postgres: every operation and status, checked against the OpenAPI
 * document; every change audited and announced to the replicas.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request, { type Response } from 'supertest';
import { LocalKeyEvents, type KeyChange } from '../../src/keys/key-events.js';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { migrate } from '../../src/store/migrate.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
/** Saturday 2026-11-21 14:23:02.400 UTC. */
const START = Date.UTC(2026, 10, 21, 14, 23, 2, 400);
const ROUTES = '/tollgate/routes';
const ROUTE = '/tollgate/routes/{routeId}';
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
  expect(res.body).toMatchObject({ code: 'validation_failed' });
  // A nullable field the schema refuses is named once per branch of its union: the fields, once each.
  expect([...new Set(res.body.details.map((d: { field: string }) => d.field))].sort()).toEqual(
    [...fields].sort(),
  );
}

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('the route table on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let now = START;
  const events: KeyChange[] = [];

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    const keyEvents = new LocalKeyEvents();
    keyEvents.subscribe((change) => events.push(change));
    app = createManagementApp(
      managementDeps(storage.handle.db, {
        keyEvents,
        rootToken: ROOT_TOKEN,
        logger: createLogger('silent'),
        clock: () => now,
      }),
    );
  }, 60_000);

  afterAll(() => storage.dispose());

  const call = (method: Method, path: string, body?: unknown) => {
    const req = request(app)[method](path).set(AUTH);
    return body === undefined ? req : req.send(body as object);
  };
  const create = async (body: Record<string, unknown>) =>
    documented('post', ROUTES, await call('post', ROUTES, body));
  const auditOf = async (routeId: string) =>
    (await call('get', `/tollgate/audit-log?targetId=${routeId}`)).body.auditLog as {
      action: string;
      target: unknown;
      changes: { before: unknown; after: unknown };
    }[];
  const id = () => 'r-' + randomBytes(4).toString('hex');

  it('creates a route with its defaults filled in, at its own path, audited and announced', async () => {
    events.length = 0;
    const routeId = id();
    const res = await create({
      routeId,
      match: { host: 'API.Example.com', pathPrefix: '/v1/search' },
      upstreamUrl: 'http://search.internal:8080/api',
    });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/tollgate/routes/${routeId}`);
    const route = {
      routeId,
      match: { host: 'api.example.com', pathPrefix: '/v1/search', methods: null, caseInsensitive: false },
      upstreamUrl: 'http://search.internal:8080/api',
      stripPrefix: false,
      timeoutMs: null,
      createdAt: '2026-11-21T14:23:02Z',
      lastUpdated: '2026-11-21T14:23:02Z',
      cors: null,
    };
    expect(res.body).toEqual(route);
    expect(documented('get', ROUTE, await call('get', `/tollgate/routes/${routeId}`)).body).toEqual(route);
    expect(events).toEqual([{ kind: 'routes' }]);
    const [entry] = await auditOf(routeId);
    expect(entry).toMatchObject({
      action: 'route.create',
      target: { type: 'route', id: routeId },
      changes: {
        before: null,
        after: {
          routeId,
          match: route.match,
          upstreamUrl: route.upstreamUrl,
          stripPrefix: false,
          timeoutMs: null,
        },
      },
    });
  });

  it('lists every route, oldest first', async () => {
    const first = id();
    const second = id();
    now += 1_000;
    await create({
      routeId: first,
      match: { pathPrefix: `/${first}`, methods: ['GET', 'HEAD'] },
      upstreamUrl: 'https://a.example',
      stripPrefix: true,
      timeoutMs: 250,
    });
    now += 1_000;
    await create({
      routeId: second,
      match: { host: '*.example.com', pathPrefix: '/' },
      upstreamUrl: 'http://b.example',
    });
    const res = documented('get', ROUTES, await call('get', ROUTES));
    expect(res.status).toBe(200);
    const ids = (res.body.routes as { routeId: string }[]).map((r) => r.routeId);
    expect(ids.indexOf(first)).toBeLessThan(ids.indexOf(second));
    expect(res.body.routes).toContainEqual(
      expect.objectContaining({
        routeId: first,
        match: { host: null, pathPrefix: `/${first}`, methods: ['GET', 'HEAD'], caseInsensitive: false },
        stripPrefix: true,
        timeoutMs: 250,
      }),
    );
  });

  it('refuses a second route with the same id, and one no request could tell from another, with 409 route_exists', async () => {
    const routeId = id();
    const prefix = `/${routeId}`;
    await create({
      routeId,
      match: { host: 'api.example.com', pathPrefix: prefix, methods: ['GET', 'POST'] },
      upstreamUrl: 'http://a.example',
    });
    const again = await create({
      routeId,
      match: { pathPrefix: '/elsewhere' },
      upstreamUrl: 'http://a.example',
    });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      error: `A route with id "${routeId}" already exists`,
      code: 'route_exists',
    });
    for (const match of [
      { host: 'API.example.com', pathPrefix: prefix, methods: ['POST'] },
      { host: 'api.example.com', pathPrefix: prefix },
    ]) {
      const clash = await create({ routeId: id(), match, upstreamUrl: 'http://b.example' });
      expect(clash.status).toBe(409);
      expect(clash.body).toEqual({
        error: `Route ${routeId} already takes this host, path prefix and a method in common`,
        code: 'route_exists',
      });
    }
    // Another method, another host, another prefix: each can be told apart.
    for (const match of [
      { host: 'api.example.com', pathPrefix: prefix, methods: ['DELETE'] },
      { host: '*.example.com', pathPrefix: prefix },
      { pathPrefix: prefix },
      { host: 'api.example.com', pathPrefix: `${prefix}/x` },
    ]) {
      expect((await create({ routeId: id(), match, upstreamUrl: 'http://b.example' })).status).toBe(201);
    }
  });

  it('keeps a prefix in normal form, and takes prefixes differing in case for one where either route is caseInsensitive', async () => {
    const routeId = id();
    const created = await create({
      routeId,
      match: { pathPrefix: `/%76%31/${routeId}/A%2fb`, caseInsensitive: true },
      upstreamUrl: 'http://a.example',
    });
    expect(created.status).toBe(201);
    // Unreserved characters decoded, other escapes in upper case: the form request paths are matched in.
    expect(created.body.match).toEqual({
      host: null,
      pathPrefix: `/v1/${routeId}/A%2Fb`,
      methods: null,
      caseInsensitive: true,
    });
    const shouting = { pathPrefix: `/V1/${routeId.toUpperCase()}/a%2fB` };
    const clash = await create({ routeId: id(), match: shouting, upstreamUrl: 'http://b.example' });
    expect(clash.status).toBe(409);
    expect(clash.body.code).toBe('route_exists');
    const changed = await call('patch', `/tollgate/routes/${routeId}`, { match: { caseInsensitive: false } });
    expect(documented('patch', ROUTE, changed).body.match.caseInsensitive).toBe(false);
    // Both compared as written now: a request can tell them apart.
    expect((await create({ routeId: id(), match: shouting, upstreamUrl: 'http://b.example' })).status).toBe(
      201,
    );
  });

  it('lets only one of several overlapping routes created at once in', async () => {
    const prefix = `/${id()}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        call('post', ROUTES, {
          routeId: id(),
          match: { pathPrefix: prefix },
          upstreamUrl: 'http://a.example',
        }),
      ),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, ...Array(7).fill(409)]);
    const table = (await call('get', ROUTES)).body.routes as { match: { pathPrefix: string } }[];
    expect(table.filter((r) => r.match.pathPrefix === prefix)).toHaveLength(1);
  });

  it('refuses each malformed field with 400 naming it, and stores nothing', async () => {
    const ok = { routeId: id(), match: { pathPrefix: '/ok' }, upstreamUrl: 'http://a.example' };
    const cases: [Record<string, unknown>, string[]][] = [
      [{ ...ok, routeId: 'has space' }, ['routeId']],
      [{ ...ok, routeId: 'x'.repeat(129) }, ['routeId']],
      [{ ...ok, routeId: 'none' }, ['routeId']],
      [{ ...ok, routeId: 'catch-all' }, ['routeId']],
      [{ ...ok, match: { pathPrefix: 'v1' } }, ['match.pathPrefix']],
      [{ ...ok, match: { pathPrefix: '/v1/' } }, ['match.pathPrefix']],
      [{ ...ok, match: { pathPrefix: '/v1//x' } }, ['match.pathPrefix']],
      [{ ...ok, match: { pathPrefix: '/v1/../admin' } }, ['match.pathPrefix']],
      [{ ...ok, match: { pathPrefix: '/v1/%2e%2e' } }, ['match.pathPrefix']],
      [{ ...ok, match: { pathPrefix: '/v1?x=1' } }, ['match.pathPrefix']],
      [{ ...ok, match: {} }, ['match.pathPrefix']],
      [{ ...ok, match: { pathPrefix: '/v1', host: 'a..example.com' } }, ['match.host']],
      [{ ...ok, match: { pathPrefix: '/v1', host: 'api.*.example.com' } }, ['match.host']],
      [{ ...ok, match: { pathPrefix: '/v1', host: '*' } }, ['match.host']],
      [{ ...ok, match: { pathPrefix: '/v1', host: 'api.example.com:8080' } }, ['match.host']],
      [{ ...ok, match: { pathPrefix: '/v1', methods: [] } }, ['match.methods']],
      [{ ...ok, match: { pathPrefix: '/v1', methods: ['GET', 'GET'] } }, ['match.methods']],
      [{ ...ok, match: { pathPrefix: '/v1', methods: ['get'] } }, ['match.methods', 'match.methods.0']],
      [{ ...ok, match: { pathPrefix: '/v1', other: 1 } }, ['match.other']],
      [{ ...ok, upstreamUrl: 'ftp://a.example' }, ['upstreamUrl']],
      [{ ...ok, upstreamUrl: 'http://a.example/?q=1' }, ['upstreamUrl']],
      [{ ...ok, upstreamUrl: 'http://a.example/#top' }, ['upstreamUrl']],
      [{ ...ok, upstreamUrl: 'http://user:pass@a.example' }, ['upstreamUrl']],
      [{ ...ok, upstreamUrl: 'http://[::1' }, ['upstreamUrl']],
      [{ ...ok, timeoutMs: 0 }, ['timeoutMs']],
      [{ ...ok, timeoutMs: 3_600_001 }, ['timeoutMs']],
      [{ ...ok, timeoutMs: 1.5 }, ['timeoutMs']],
      [{ ...ok, stripPrefix: 'yes' }, ['stripPrefix']],
      [{ match: { pathPrefix: '/v1' } }, ['routeId', 'upstreamUrl']],
    ];
    for (const [body, fields] of cases) {
      const res = documented('post', ROUTES, await call('post', ROUTES, body));
      try {
        expectInvalid(res, fields);
      } catch (err) {
        throw new Error(`${JSON.stringify(body)}: ${JSON.stringify(res.body)}`, { cause: err });
      }
    }
    const table = (await call('get', ROUTES)).body.routes as { routeId: string }[];
    expect(table.map((r) => r.routeId)).not.toContain(ok.routeId);
    // The limits themselves are accepted.
    expect(
      (
        await create({
          ...ok,
          routeId: 'x'.repeat(128),
          timeoutMs: 3_600_000,
          match: { pathPrefix: "/a-z_~.!$&'()*+,;=:@%2F" },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await create({
          ...ok,
          routeId: id(),
          timeoutMs: 1,
          match: { pathPrefix: '/ok1', host: '*.a-b.example.com' },
        })
      ).status,
    ).toBe(201);
  });

  it('changes a route: the fields of match given, the rest kept; null clears host, methods and timeoutMs', async () => {
    const routeId = id();
    const createdAt = isoOf(now);
    await create({
      routeId,
      match: { host: 'api.example.com', pathPrefix: `/${routeId}`, methods: ['GET'] },
      upstreamUrl: 'http://a.example',
      timeoutMs: 100,
    });
    events.length = 0;
    now += 60_000;
    const res = documented(
      'patch',
      ROUTE,
      await call('patch', `/tollgate/routes/${routeId}`, {
        match: { methods: ['GET', 'POST'] },
        upstreamUrl: 'https://b.example/base',
        stripPrefix: true,
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      match: { host: 'api.example.com', pathPrefix: `/${routeId}`, methods: ['GET', 'POST'] },
      upstreamUrl: 'https://b.example/base',
      stripPrefix: true,
      timeoutMs: 100,
      createdAt,
      lastUpdated: isoOf(now),
    });
    expect(events).toEqual([{ kind: 'routes' }]);
    const cleared = documented(
      'patch',
      ROUTE,
      await call('patch', `/tollgate/routes/${routeId}`, {
        match: { host: null, methods: null },
        timeoutMs: null,
      }),
    );
    expect(cleared.body).toMatchObject({
      match: { host: null, pathPrefix: `/${routeId}`, methods: null },
      timeoutMs: null,
    });
    const [last] = await auditOf(routeId);
    expect(last).toMatchObject({
      action: 'route.update',
      target: { type: 'route', id: routeId },
      changes: {
        before: { match: { host: 'api.example.com', methods: ['GET', 'POST'] }, timeoutMs: 100 },
        after: { match: { host: null, methods: null }, timeoutMs: null },
      },
    });
    expect(documented('get', ROUTE, await call('get', `/tollgate/routes/${routeId}`)).body).toEqual(
      cleared.body,
    );
  });

  it('records nothing for a change that changes nothing', async () => {
    const routeId = id();
    await create({
      routeId,
      match: { pathPrefix: `/${routeId}` },
      upstreamUrl: 'http://a.example',
      stripPrefix: true,
    });
    const before = await auditOf(routeId);
    events.length = 0;
    now += 60_000;
    const res = documented(
      'patch',
      ROUTE,
      await call('patch', `/tollgate/routes/${routeId}`, {
        match: { pathPrefix: `/${routeId}` },
        stripPrefix: true,
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body.lastUpdated).toBe(res.body.createdAt);
    expect(await auditOf(routeId)).toHaveLength(before.length);
    expect(events).toEqual([]);
  });

  it('lets a change share a prefix under another method, and refuses a malformed body naming each field', async () => {
    const taken = id();
    const mine = id();
    await create({
      routeId: taken,
      match: { pathPrefix: `/${taken}`, methods: ['GET'] },
      upstreamUrl: 'http://a.example',
    });
    await create({
      routeId: mine,
      match: { pathPrefix: `/${mine}`, methods: ['GET'] },
      upstreamUrl: 'http://a.example',
    });
    // Onto another route's match it is refused (its table in src/management/resources/routes proves how);
    // with another method it can share the prefix.
    expect(
      (
        await call('patch', `/tollgate/routes/${mine}`, {
          match: { pathPrefix: `/${taken}`, methods: ['POST'] },
        })
      ).status,
    ).toBe(200);
    expectInvalid(documented('patch', ROUTE, await call('patch', `/tollgate/routes/${mine}`, {})), [
      '(body)',
    ]);
    expectInvalid(
      documented('patch', ROUTE, await call('patch', `/tollgate/routes/${mine}`, { match: {} })),
      ['match'],
    );
    expectInvalid(
      documented(
        'patch',
        ROUTE,
        await call('patch', `/tollgate/routes/${mine}`, { match: { pathPrefix: null } }),
      ),
      ['match.pathPrefix'],
    );
    expectInvalid(
      documented('patch', ROUTE, await call('patch', `/tollgate/routes/${mine}`, { routeId: 'renamed' })),
      ['routeId'],
    );
  });

  it('deletes a route, audited and announced; then it is not found', async () => {
    const routeId = id();
    await create({ routeId, match: { pathPrefix: `/${routeId}` }, upstreamUrl: 'http://a.example' });
    events.length = 0;
    const res = documented('delete', ROUTE, await call('delete', `/tollgate/routes/${routeId}`));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ routeId, message: `Route ${routeId} has been deleted` });
    expect(events).toEqual([{ kind: 'routes' }]);
    const [entry] = await auditOf(routeId);
    expect(entry).toMatchObject({
      action: 'route.delete',
      target: { type: 'route', id: routeId },
      changes: { after: null },
    });
    for (const method of ['get', 'delete'] as const) {
      const gone = documented(method, ROUTE, await call(method, `/tollgate/routes/${routeId}`));
      expect(gone.status).toBe(404);
      expect(gone.body).toEqual({ error: 'No route has that id', code: 'route_not_found' });
    }
    // The prefix is free again.
    expect(
      (await create({ routeId: id(), match: { pathPrefix: `/${routeId}` }, upstreamUrl: 'http://a.example' }))
        .status,
    ).toBe(201);
  });
});

function isoOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + 'Z';
}
