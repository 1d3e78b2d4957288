/**
 * The built server as a child process in front of a real backend, on one node: embedded SQLite with
 * nothing configured, and the same suite on a real Postgres (DATABASE_URL).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { waitFor } from '../helpers/poll.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';
import { DAY_MS, SECOND_MS, TestClock } from '../helpers/test-clock.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

interface Mode {
  name: string;
  env(): Promise<Record<string, string>>;
  cleanup(): Promise<void>;
}

let database: TestDatabase | undefined;
const modes: Mode[] = [
  {
    name: 'embedded (SQLite)',
    env: async () => ({ DATA_DIR: mkdtempSync(join(tmpdir(), 'tollgate-embedded-')) }),
    cleanup: async () => {},
  },
  {
    name: 'Postgres (DATABASE_URL)',
    env: async () => {
      database = await createTestDatabase();
      return { DATABASE_URL: database.url, SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
    },
    cleanup: async () => database?.drop(),
  },
];

function call(tollgate: Tollgate, path: string, secret: string | undefined, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  if (secret) headers.set('authorization', `Bearer ${secret}`);
  return fetch(tollgate.url + path, { ...init, headers });
}

describe.each(modes)('one node, $name', (mode) => {
  let backend: Backend;
  let env: Record<string, string>;
  let tollgate: Tollgate;
  // Days and half a second ahead of the wall clock: windows and reset times can only match it.
  const clock = new TestClock();
  clock.advance(3 * DAY_MS + 500);

  beforeAll(async () => {
    backend = await startBackend();
    env = { ...(await mode.env()), UPSTREAM_URL: backend.url + '/base', ...clock.env };
    tollgate = await startTollgate(env);
  });

  afterAll(async () => {
    await tollgate?.stop();
    await backend?.close();
    await mode.cleanup();
  });

  it('forwards a keyed request with x-api-key and the key id, path and query intact', async () => {
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'forwarding' });
    expect(created.status).toBe(201);
    const { id, secret } = created.body as { id: string; secret: string };
    backend.received.length = 0;

    // node:http, not fetch: fetch refuses to send a Connection header.
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(tollgate.url + '/v1/items/7?color=red&size=2', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${secret}`,
          'content-type': 'text/plain',
          connection: 'keep-alive, x-drop-me',
          'x-drop-me': '1',
          'x-api-key': 'forged',
          'x-consumer-api-key-id': 'forged',
        },
      });
      req.on('response', resolve).on('error', reject);
      req.end('hello backend');
    });
    res.resume();
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-backend']).toBe('yes');

    expect(backend.received).toHaveLength(1);
    const seen = backend.received[0]!;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/base/v1/items/7?color=red&size=2');
    expect(seen.headers['x-api-key']).toBe(secret);
    expect(seen.headers['x-consumer-api-key-id']).toBe(id);
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-drop-me']).toBeUndefined();
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.body.toString()).toBe('hello backend');
  });

  it('answers 401 without a key and with an unknown key, and forwards nothing', async () => {
    backend.received.length = 0;
    const missing = await call(tollgate, '/v1/items', undefined);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ code: 'missing_api_key' });
    const unknown = await call(tollgate, '/v1/items', 'tg_' + randomBytes(32).toString('base64url'));
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ code: 'invalid_api_key' });
    expect(backend.received).toHaveLength(0);
  });

  it('lets exactly L of N concurrent requests reach the backend', async () => {
    const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'concurrency' });
    const planId = 'exact-' + randomBytes(4).toString('hex');
    expect(
      (await tollgate.admin('POST', '/rate-limit/create', { rateLimitId: planId, limit: 10, period: 'day' }))
        .status,
    ).toBe(201);
    expect(
      (
        await tollgate.admin('POST', '/api-keys/apply-rate-limit', {
          consumerApiKeyId: key.id,
          rateLimitId: planId,
        })
      ).status,
    ).toBe(200);
    backend.received.length = 0;

    const statuses = await Promise.all(
      Array.from({ length: 60 }, () => call(tollgate, '/v1/burst', key.secret).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(50);
    expect(backend.received.filter((r) => r.url === '/base/v1/burst')).toHaveLength(10);
  });

  it('refuses over the limit of a 1-second window of its clock with the documented 429, then admits again', async () => {
    const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'per-second' });
    const planId = 'second-' + randomBytes(4).toString('hex');
    await tollgate.admin('POST', '/rate-limit/create', {
      rateLimitId: planId,
      description: 'two a second',
      limit: 2,
      period: 'second',
    });
    await tollgate.admin('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: key.id,
      rateLimitId: planId,
    });

    // Just after a second boundary of the process's clock, so all three calls share one window.
    const boundary = clock.after(SECOND_MS, 20);
    const first = await call(tollgate, '/v1/tick', key.secret);
    const second = await call(tollgate, '/v1/tick', key.secret);
    const third = await call(tollgate, '/v1/tick', key.secret);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 429]);
    // The headers by value (draft-ietf-httpapi-ratelimit-headers): quota, window, what is left, seconds to reset.
    expect(first.headers.get('ratelimit-policy')).toBe('"second";q=2;w=1');
    expect(first.headers.get('ratelimit')).toBe('"second";r=1;t=1');
    expect(second.headers.get('ratelimit')).toBe('"second";r=0;t=1');
    expect(third.headers.get('ratelimit-policy')).toBe('"second";q=2;w=1');
    expect(third.headers.get('ratelimit')).toBe('"second";r=0;t=1');

    const body = (await third.json()) as Record<string, unknown>;
    expect(body).toEqual({
      error: expect.any(String),
      code: 'rate_limit_exceeded',
      limit: 2,
      period: 'second',
      remaining: 0,
      resetTime: expect.stringMatching(ISO),
      name: 'second',
      scope: 'key',
      per: 'key',
    });
    expect(Date.parse(body.resetTime as string)).toBe(boundary + SECOND_MS);
    expect(third.headers.get('retry-after')).toBe('1');

    clock.advance(Date.parse(body.resetTime as string) - clock.now() + 20);
    expect((await call(tollgate, '/v1/tick', key.secret)).status).toBe(200);
  });

  it('reports usage of successes, backend errors, 429s and a slow endpoint, per endpoint and customer', async () => {
    const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'usage' });
    const planId = 'usage-' + randomBytes(4).toString('hex');
    await tollgate.admin('POST', '/rate-limit/create', { rateLimitId: planId, limit: 7, period: 'day' });
    await tollgate.admin('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: key.id,
      rateLimitId: planId,
    });

    const acme = { 'x-customer-id': 'acme' };
    for (let i = 0; i < 3; i++)
      expect((await call(tollgate, '/v1/ok?i=' + i, key.secret, { headers: acme })).status).toBe(200);
    expect((await call(tollgate, '/status/500', key.secret, { headers: acme })).status).toBe(500);
    expect((await call(tollgate, '/status/404', key.secret)).status).toBe(404);
    expect(
      (await call(tollgate, '/slow/300', key.secret, { headers: { 'x-customer-id': 'globex' } })).status,
    ).toBe(200);
    expect((await call(tollgate, '/v1/ok', key.secret)).status).toBe(200);
    // Limit 7 spent: these two are refused and count as failed.
    expect((await call(tollgate, '/v1/ok', key.secret)).status).toBe(429);
    expect((await call(tollgate, '/v1/ok', key.secret, { headers: acme })).status).toBe(429);

    // Each request is counted as its answer finishes: the last may be counted just after it arrived.
    const { value: detail } = await waitFor(
      () => tollgate.admin('GET', `/consumer-api-key/${key.id}`),
      (d) => d.status !== 200 || d.body.usage.totalRequests >= 9,
    );
    expect(detail.status).toBe(200);
    const usage = detail.body.usage;
    expect(usage).toMatchObject({ totalRequests: 9, successfulRequests: 5, failedRequests: 4 });
    expect(usage.rateLimits).toEqual({
      limit: 7,
      remaining: 0,
      resetTime: expect.stringMatching(ISO),
      limits: [
        {
          name: expect.any(String),
          limit: 7,
          period: expect.any(String),
          remaining: 0,
          resetTime: expect.stringMatching(ISO),
          scope: 'key',
          per: 'key',
        },
      ],
    });
    expect(usage.endpoints.map((e: { endpoint: string }) => e.endpoint)).toEqual([
      '/v1/ok',
      '/slow/300',
      '/status/404',
      '/status/500',
    ]);
    expect(usage.endpoints[0]).toMatchObject({ endpoint: '/v1/ok', requests: 6, successful: 4, failed: 2 });
    const slow = usage.endpoints.find((e: { endpoint: string }) => e.endpoint === '/slow/300');
    expect(slow).toMatchObject({ requests: 1, successful: 1, failed: 0 });
    expect(slow.averageResponseTimeMs).toBeGreaterThanOrEqual(300);
    expect(usage.endpoints[0].averageResponseTimeMs).toBeLessThan(300);
    expect(usage.usageByCustomer).toEqual([
      { customerId: 'acme', requests: 5, successful: 3, failed: 2 },
      { customerId: 'globex', requests: 1, successful: 1, failed: 0 },
    ]);
  });

  it('keeps keys, plans, bindings and usage across a restart, and SIGTERM exits 0', async () => {
    const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'survivor' });
    const planId = 'restart-' + randomBytes(4).toString('hex');
    await tollgate.admin('POST', '/rate-limit/create', { rateLimitId: planId, limit: 1000, period: 'hour' });
    await tollgate.admin('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: key.id,
      rateLimitId: planId,
    });
    // Recorded less than a second before SIGTERM: only the shutdown flush can save these.
    for (let i = 0; i < 4; i++) expect((await call(tollgate, '/v1/keep', key.secret)).status).toBe(200);
    const before = await tollgate.admin('GET', `/consumer-api-key/${key.id}`);

    expect(await tollgate.stop()).toBe(0);
    tollgate = await startTollgate({ ...env, ROOT_TOKEN: tollgate.rootToken });

    const after = await tollgate.admin('GET', `/consumer-api-key/${key.id}`);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({
      consumerApiKeyId: key.id,
      name: 'survivor',
      secret: key.secret,
      lastUpdated: before.body.lastUpdated,
    });
    expect(after.body.usage.totalRequests).toBe(4);
    expect(after.body.usage.rateLimits.limit).toBe(1000);
    expect((await call(tollgate, '/v1/keep', key.secret)).status).toBe(200);
    const list = await tollgate.admin('GET', '/consumer-api-key?limit=1000');
    expect(list.body.apiKeys.map((k: { consumerApiKeyId: string }) => k.consumerApiKeyId)).toContain(key.id);
  });

  it('refuses a deleted key at once', async () => {
    const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'doomed' });
    expect((await call(tollgate, '/v1/x', key.secret)).status).toBe(200);
    expect((await tollgate.admin('DELETE', `/consumer-api-key/${key.id}`)).body).toMatchObject({
      consumerApiKeyId: key.id,
    });
    expect((await call(tollgate, '/v1/x', key.secret)).status).toBe(401);
  });

  it('serves health, readiness, metrics and the OpenAPI document on the ops port', async () => {
    expect((await fetch(tollgate.opsUrl + '/healthz')).status).toBe(200);
    expect((await fetch(tollgate.opsUrl + '/readyz')).status).toBe(200);
    const metrics = await (await fetch(tollgate.opsUrl + '/metrics')).text();
    expect(metrics).toMatch(/tollgate_proxy_requests_total\{outcome="forwarded"\} \d+/);
    // promtool (Debian package prometheus, installed by .ci/run) lints the exposition format.
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: metrics, encoding: 'utf8' });
    expect({ status: lint.status, problems: lint.stdout + lint.stderr }).toEqual({ status: 0, problems: '' });
    const openapi = (await (await fetch(tollgate.opsUrl + '/openapi.json')).json()) as {
      openapi: string;
      servers: { url: string; variables: { port: { default: string } } }[];
    };
    expect(openapi.openapi).toMatch(/^3\.1/);
    // Clients built from the document call the public listener, not the ops port that serves it.
    expect(openapi.servers[0]!.variables.port.default).toBe(new URL(tollgate.url).port);
  });

  it('never writes a secret to its logs', () => expectNoSecretsLogged());
});

it('refuses a test clock in production: one line on stderr and a non-zero exit, before opening anything', () => {
  const started = spawnSync(process.execPath, [resolve(import.meta.dirname, '../../dist/src/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      ROOT_TOKEN: 'root-' + randomBytes(16).toString('hex'),
      TEST_CLOCK_FILE: new TestClock().file,
    },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect({ status: started.status, stderr: started.stderr }).toEqual({
    status: 1,
    stderr: 'tollgate: TEST_CLOCK_FILE: a test clock is refused when NODE_ENV=production: unset it\n',
  });
});
