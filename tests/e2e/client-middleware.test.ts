/**
 * @tollgate/client's middleware answers a request as the proxy does: for the same refusal Express and
 * Fastify answer with the proxy's status, body and Tollgate headers (Retry-After, RateLimit-Policy,
 * RateLimit, WWW-Authenticate, Content-Type, Content-Length), byte for byte, compared with the built
 * Tollgate's proxy, the middleware asking that Tollgate's POST /tollgate/verify; an admitted request
 * reaches the route with the verify answer and the proxy's RateLimit headers, and is counted in the
 * key's usage as a proxied one. Refusals charge nothing, so one key serves the proxy and both
 * middlewares; an admitted request uses a fresh key per answerer. Every case of admission is held to
 * the proxy in tests/integration/verify-as-proxy.test.ts; this file holds Express and Fastify to it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  tollgateExpress,
  tollgateFastify,
  type TollgateMiddlewareOptions,
} from '../../packages/client/src/index.js';
import { waitFor } from '../helpers/poll.js';
import { MINUTE_MS, SECOND_MS, TestClock } from '../helpers/test-clock.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let tollgate: Tollgate;
const clock = new TestClock();

let expressServer: Server;
let fastify: FastifyInstance;
const answerers: Record<'express' | 'fastify', string> = { express: '', fastify: '' };

/** An Express app and a Fastify app, each guarded by the middleware, whose routes show what they got. */
async function startApps(
  options: TollgateMiddlewareOptions,
): Promise<{ expressServer: Server; fastify: FastifyInstance; urls: typeof answerers }> {
  const app = express();
  app.use(tollgateExpress(options));
  app.use((req, res) => {
    res.json({ reached: true, tollgate: req.tollgate });
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const instance = Fastify();
  await instance.register(tollgateFastify, options);
  instance.all('/*', async (request) => ({ reached: true, tollgate: request.tollgate }));
  await instance.listen({ port: 0, host: '127.0.0.1' });
  return {
    expressServer: server,
    fastify: instance,
    urls: {
      express: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      fastify: `http://127.0.0.1:${(instance.server.address() as AddressInfo).port}`,
    },
  };
}

beforeAll(async () => {
  backend = await startBackend();
  tollgate = await startTollgate({ UPSTREAM_URL: backend.url, ...clock.env });
  const apps = await startApps({
    baseUrl: tollgate.url,
    token: tollgate.rootToken,
    clock: () => clock.now(),
  });
  ({ expressServer, fastify } = apps);
  Object.assign(answerers, apps.urls);
});

afterAll(async () => {
  await fastify?.close();
  await new Promise((resolve) => expressServer?.close(resolve));
  await tollgate?.stop();
  await backend?.close();
  expectNoSecretsLogged();
});

/** The headers the proxy itself sets on a refusal (not the server's Date, Connection or x-request-id). */
const TOLLGATE_HEADERS = [
  'retry-after',
  'ratelimit-policy',
  'ratelimit',
  'www-authenticate',
  'content-type',
  'content-length',
];

interface Seen {
  readonly status: number;
  readonly headers: Record<string, string | null>;
  readonly body: string;
}

async function seen(url: string, headers: Record<string, string>): Promise<Seen> {
  const res = await fetch(url, { headers });
  return {
    status: res.status,
    headers: Object.fromEntries(TOLLGATE_HEADERS.map((name) => [name, res.headers.get(name)])),
    body: await res.text(),
  };
}

/**
 * Tollgate's and the middlewares' clock moved to a fresh second: Retry-After and RateLimit's `t` count
 * whole seconds, so compared answers share one.
 */
function startOfSecond(): void {
  clock.after(SECOND_MS, 5);
}

async function createKey(
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string; name: string }> {
  const created = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: 'middleware-' + randomBytes(3).toString('hex'),
    ...body,
  });
  expect(created.status).toBe(201);
  return created.body;
}

async function createPlan(limit: number): Promise<string> {
  const rateLimitId = 'client-' + randomBytes(4).toString('hex');
  expect(
    (await tollgate.admin('POST', '/rate-limit/create', { rateLimitId, limit, period: 'day' })).status,
  ).toBe(201);
  return rateLimitId;
}

/** Verify decisions counted by the Tollgate so far (its /metrics), all codes. */
async function verifications(): Promise<number> {
  const text = await (await fetch(tollgate.opsUrl + '/metrics')).text();
  return [...text.matchAll(/^tollgate_verifications_total\{[^}]*\} (\d+)$/gm)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** The proxy's answer, then each middleware's, to the same refused request within one second. */
async function refusalsTo(
  headers: Record<string, string>,
): Promise<{ proxy: Seen; express: Seen; fastify: Seen }> {
  startOfSecond();
  const proxy = await seen(tollgate.url + '/v1/items', headers);
  return {
    proxy,
    express: await seen(answerers.express + '/v1/items', headers),
    fastify: await seen(answerers.fastify + '/v1/items', headers),
  };
}

function expectSameAsProxy(
  answers: { proxy: Seen; express: Seen; fastify: Seen },
  status: number,
  code: string,
): void {
  expect(answers.proxy.status).toBe(status);
  expect(JSON.parse(answers.proxy.body)).toMatchObject({ error: expect.any(String) });
  if (code !== 'rate_limit_exceeded') expect(JSON.parse(answers.proxy.body).code).toBe(code);
  expect({ express: answers.express, fastify: answers.fastify }).toEqual({
    express: answers.proxy,
    fastify: answers.proxy,
  });
}

describe('the middleware answers a refused request as the proxy does', () => {
  it('401 missing_api_key without a credential, without asking verify', async () => {
    const before = await verifications();
    expectSameAsProxy(await refusalsTo({}), 401, 'missing_api_key');
    expect(await verifications()).toBe(before);
  });

  it('401 invalid_api_key for an unknown key, and for a credential of another scheme', async () => {
    expectSameAsProxy(
      await refusalsTo(bearer('tg_' + randomBytes(32).toString('base64url'))),
      401,
      'invalid_api_key',
    );
    expectSameAsProxy(await refusalsTo({ authorization: 'Basic dXNlcjpwYXNz' }), 401, 'invalid_api_key');
  });

  it('403 key_disabled for a disabled key, presented as x-api-key', async () => {
    const key = await createKey({ enabled: false });
    expectSameAsProxy(await refusalsTo({ 'x-api-key': key.secret }), 403, 'key_disabled');
  });

  it('400 invalid_customer_id for a customer id holding a control character, without asking verify', async () => {
    const key = await createKey({});
    const before = await verifications();
    expectSameAsProxy(
      await refusalsTo({ ...bearer(key.secret), 'x-customer-id': 'cus\t1' }),
      400,
      'invalid_customer_id',
    );
    expect(await verifications()).toBe(before);
  });

  it('401 key_expired for an expired key', async () => {
    const key = await createKey({ expiresAt: '2020-01-01T00:00:00Z' });
    expectSameAsProxy(await refusalsTo(bearer(key.secret)), 401, 'key_expired');
  });

  it('403 route_not_allowed for a key limited to another route', async () => {
    const routeId = 'client-' + randomBytes(3).toString('hex');
    const route = await tollgate.admin('POST', '/tollgate/routes', {
      routeId,
      match: { pathPrefix: '/v9' },
      upstreamUrl: backend.url,
    });
    expect(route.status).toBe(201);
    const key = await createKey({ allowedRouteIds: [routeId] });
    expectSameAsProxy(await refusalsTo(bearer(key.secret)), 403, 'route_not_allowed');
  });

  it('429 rate_limit_exceeded over the limit, with Retry-After, RateLimit-Policy and RateLimit', async () => {
    const key = await createKey({ rateLimitId: await createPlan(1) });
    expect((await fetch(tollgate.url + '/v1/items', { headers: bearer(key.secret) })).status).toBe(200);
    // The proxy spent the key's quota: verify refuses the middlewares' requests for the same key.
    const answers = await refusalsTo(bearer(key.secret));
    expectSameAsProxy(answers, 429, 'rate_limit_exceeded');
    expect(answers.proxy.headers).toMatchObject({
      'retry-after': expect.any(String),
      'ratelimit-policy': '"day";q=1;w=86400',
      ratelimit: expect.stringMatching(/^"day";r=0;t=\d+$/),
    });
  });
});

describe('the middleware answers the refusals of token buckets and concurrency limits as the proxy does', () => {
  it('429 rate_limit_exceeded by a token bucket, with when it will hold the cost', async () => {
    const rateLimitId = 'client-bucket-' + randomBytes(4).toString('hex');
    const limits = [{ limit: 1, period: 'day', algorithm: 'tokenBucket', burst: 1 }];
    expect((await tollgate.admin('POST', '/rate-limit/create', { rateLimitId, limits })).status).toBe(201);
    const key = await createKey({ rateLimitId });
    expect((await fetch(tollgate.url + '/v1/items', { headers: bearer(key.secret) })).status).toBe(200);
    const answers = await refusalsTo(bearer(key.secret));
    expectSameAsProxy(answers, 429, 'rate_limit_exceeded');
    expect(answers.proxy.headers['ratelimit-policy']).toBe('"day";q=1;w=86400');
  });

  it('429 concurrency_limit_exceeded while the key’s one place is held by a request in flight', async () => {
    const rateLimitId = 'client-places-' + randomBytes(4).toString('hex');
    const limits = [{ limit: 1, algorithm: 'concurrency' }];
    expect((await tollgate.admin('POST', '/rate-limit/create', { rateLimitId, limits })).status).toBe(201);
    const key = await createKey({ rateLimitId });
    // The backend answers this one after 8 s: its place is held meanwhile.
    const held = fetch(tollgate.url + '/v1/slow/8000', { headers: bearer(key.secret) });
    await waitFor(
      async () => (await fetch(tollgate.url + '/v1/items', { headers: bearer(key.secret) })).status,
      (status) => status === 429,
    );
    const answers = await refusalsTo(bearer(key.secret));
    expectSameAsProxy(answers, 429, 'concurrency_limit_exceeded');
    expect(answers.proxy.headers).toMatchObject({
      'retry-after': '1',
      'ratelimit-policy': '"concurrency";q=1',
      ratelimit: '"concurrency";r=0;t=1',
    });
    expect((await held).status).toBe(200);
  });
});

describe('an admitted request', () => {
  it('reaches the route with the verify answer, and its response the RateLimit headers the proxy adds', async () => {
    const plan = await createPlan(10);
    const [viaProxy, viaExpress, viaFastify] = [
      await createKey({ rateLimitId: plan }),
      await createKey({ rateLimitId: plan }),
      await createKey({ rateLimitId: plan }),
    ];
    startOfSecond();
    const proxied = await fetch(tollgate.url + '/v1/items', { headers: bearer(viaProxy.secret) });
    expect(proxied.status).toBe(200);
    // `t` counts the whole seconds to the window's end from when each answered: a later answer may say one less.
    const rateLimitHeaders = (res: Response) => ({
      policy: res.headers.get('ratelimit-policy'),
      ratelimit: res.headers.get('ratelimit')?.replace(/;t=\d+$/, ''),
      t: Number(/;t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '')?.[1]),
    });
    const { t, ...asProxied } = rateLimitHeaders(proxied);
    for (const [answerer, key] of [
      ['express', viaExpress],
      ['fastify', viaFastify],
    ] as const) {
      const res = await fetch(answerers[answerer] + '/v1/items', { headers: bearer(key.secret) });
      const { t: seenT, ...seen } = rateLimitHeaders(res);
      expect({ answerer, status: res.status, ...seen }).toEqual({ answerer, status: 200, ...asProxied });
      expect([t, t - 1]).toContain(seenT);
      expect(await res.json()).toEqual({
        reached: true,
        tollgate: {
          valid: true,
          code: 'ok',
          consumerApiKeyId: key.id,
          consumerId: null,
          name: key.name,
          externalId: null,
          metadata: {},
          limits: [
            {
              name: 'day',
              limit: 10,
              period: 'day',
              remaining: 9,
              resetTime: expect.stringMatching(/T00:00:00Z$/),
              scope: 'key',
              algorithm: 'fixed',
              per: 'key',
            },
          ],
          cost: 1,
        },
      });
    }
    expect(asProxied).toEqual({ policy: '"day";q=10;w=86400', ratelimit: '"day";r=9' });
  });

  it('is counted under its path (no query), method, customer id (UTF-8) and client address, as a proxied one', async () => {
    const key = await createKey({});
    // Header bytes are UTF-8 on the wire; fetch takes them as Latin-1 characters, one per byte.
    const customer = Buffer.from('kunde-ü', 'utf8').toString('latin1');
    const send = (base: string) =>
      fetch(base + '/v1/orders/7?expand=lines', {
        method: 'DELETE',
        headers: { ...bearer(key.secret), 'x-customer-id': customer },
      });
    for (const base of [tollgate.url, ...Object.values(answerers)])
      expect((await send(base)).status).toBe(200);
    const { value: usage } = await waitFor(
      async () => (await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.usage,
      (u) => u.totalRequests >= 3,
    );
    expect(usage).toMatchObject({
      totalRequests: 3,
      successfulRequests: 3,
      endpoints: [expect.objectContaining({ endpoint: '/v1/orders/7', requests: 3 })],
      usageByCustomer: [expect.objectContaining({ customerId: 'kunde-ü', requests: 3 })],
    });
  });
});

it('a failing verify admits nothing: Express passes the error to next, Fastify answers 500', async () => {
  const wrongToken = await startApps({ baseUrl: tollgate.url, token: 'not-the-token' });
  try {
    const key = await createKey({});
    for (const url of Object.values(wrongToken.urls)) {
      const res = await fetch(url + '/v1/items', { headers: bearer(key.secret) });
      expect(res.status).toBe(500);
      expect(await res.text()).not.toContain('reached');
    }
  } finally {
    await wrongToken.fastify.close();
    await new Promise((resolve) => wrongToken.expressServer.close(resolve));
  }
});

// Last: it leaves 127.0.0.1 throttled for the rest of the minute (the proxy allows 100 wrong keys a minute).
it('429 too_many_failed_attempts from an address that sent too many wrong keys, as the proxy answers it', async () => {
  const wrongKey = () => bearer('tg_' + randomBytes(32).toString('base64url'));
  // The throttle counts per minute: start at the beginning of one to compare within it.
  clock.after(MINUTE_MS, 10);
  // Half the wrong keys through the proxy, half through a middleware: verify throttles the end client's
  // address (the middleware's req.ip), and the proxy and verify spend one budget.
  let status = 0;
  for (let attempt = 0; attempt < 150 && status !== 429; attempt++) {
    const base = attempt % 2 === 0 ? tollgate.url : answerers.express;
    status = (await fetch(base + '/v1/items', { headers: wrongKey() })).status;
  }
  expect(status).toBe(429);
  expectSameAsProxy(await refusalsTo(wrongKey()), 429, 'too_many_failed_attempts');
});
