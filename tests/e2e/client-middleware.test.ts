/**
 * @tollgate/client's middleware answers a request as the proxy does: for the same refusal Express and
 * Fastify answer with the proxy's status, body and Tollgate headers (Retry-After, RateLimit-Policy,
 * RateLimit, WWW-Authenticate, Content-Type, Content-Length), byte for byte, compared with a real
 * Tollgate's proxy; an admitted request reaches the route with the verify answer and the proxy's
 * RateLimit headers.
 *
 * POST /tollgate/verify does not exist yet: the middleware asks the contract-verify-double
 * (tests/helpers), handed the answer contract 18 says verify gives for each key. Each case uses keys
 * whose state a real verify would answer the same way (refusals charge nothing; an admitted request
 * uses a fresh key per answerer). When verify lands, `verifyBaseUrl` below becomes `tollgate.url`; the
 * `double.answer(…)` fixtures then go, with the double.
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
  type VerifyAnswer,
  type VerifyLimit,
} from '../../packages/client/src/index.js';
import { secondsUntil, windowAt } from '../../src/plans/window.js';
import { startContractVerifyDouble, type ContractVerifyDouble } from '../helpers/contract-verify-double.js';
import { sleep } from '../helpers/poll.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let tollgate: Tollgate;
let double: ContractVerifyDouble;
/** Where the middleware verifies. When POST /tollgate/verify lands: `() => tollgate.url`. */
const verifyBaseUrl = () => double.url;

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
  tollgate = await startTollgate({ UPSTREAM_URL: backend.url });
  double = await startContractVerifyDouble(tollgate.rootToken);
  const apps = await startApps({ baseUrl: verifyBaseUrl(), token: tollgate.rootToken });
  ({ expressServer, fastify } = apps);
  Object.assign(answerers, apps.urls);
});

afterAll(async () => {
  await fastify?.close();
  await new Promise((resolve) => expressServer?.close(resolve));
  await double?.close();
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

/** Waits for a fresh second: Retry-After and RateLimit's `t` count whole seconds, so compared answers share one. */
async function startOfSecond(): Promise<void> {
  await sleep(1_000 - (Date.now() % 1_000) + 5);
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

/** The key's limits as verify answers them: the key detail's `usage.rateLimits.limits`, the key's own. */
async function limitsOf(keyId: string): Promise<VerifyLimit[]> {
  const detail = await tollgate.admin('GET', `/consumer-api-key/${keyId}`);
  return (detail.body.usage.rateLimits?.limits ?? []).map((limit: Omit<VerifyLimit, 'scope'>) => ({
    scope: 'key',
    ...limit,
  }));
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** The proxy's answer, then each middleware's, to the same refused request within one second. */
async function refusalsTo(
  headers: Record<string, string>,
  fixture?: () => void,
): Promise<{ proxy: Seen; express: Seen; fastify: Seen }> {
  await startOfSecond();
  fixture?.();
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
    const calls = double.calls.length;
    expectSameAsProxy(await refusalsTo({}), 401, 'missing_api_key');
    expect(double.calls.length).toBe(calls);
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
    const answers = await refusalsTo({ 'x-api-key': key.secret }, () =>
      double.answer(key.secret, {
        valid: false,
        code: 'key_disabled',
        consumerApiKeyId: key.id,
        name: key.name,
        limits: [],
      }),
    );
    expectSameAsProxy(answers, 403, 'key_disabled');
  });

  it('401 key_expired for an expired key', async () => {
    const key = await createKey({ expiresAt: '2020-01-01T00:00:00Z' });
    const answers = await refusalsTo(bearer(key.secret), () =>
      double.answer(key.secret, {
        valid: false,
        code: 'key_expired',
        consumerApiKeyId: key.id,
        name: key.name,
        limits: [],
      }),
    );
    expectSameAsProxy(answers, 401, 'key_expired');
  });

  it('429 rate_limit_exceeded over the limit, with Retry-After, RateLimit-Policy and RateLimit', async () => {
    const key = await createKey({ rateLimitId: await createPlan(1) });
    expect((await fetch(tollgate.url + '/v1/items', { headers: bearer(key.secret) })).status).toBe(200);
    const limits = await limitsOf(key.id);
    const answers = await refusalsTo(bearer(key.secret), () => {
      const resetTime = limits[0]!.resetTime;
      const retryAfterSeconds = secondsUntil(Date.parse(resetTime), Date.now());
      double.answer(key.secret, {
        valid: false,
        code: 'rate_limit_exceeded',
        consumerApiKeyId: key.id,
        name: key.name,
        limits,
        resetTime,
        retryAfterSeconds,
      });
    });
    expectSameAsProxy(answers, 429, 'rate_limit_exceeded');
    expect(answers.proxy.headers).toMatchObject({
      'retry-after': expect.any(String),
      'ratelimit-policy': '"day";q=1;w=86400',
      ratelimit: expect.stringMatching(/^"day";r=0;t=\d+$/),
    });
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
    await startOfSecond();
    const proxied = await fetch(tollgate.url + '/v1/items', { headers: bearer(viaProxy.secret) });
    expect(proxied.status).toBe(200);
    // What verify answers for a key of this plan on its first request: the proxied key's state after its first.
    const limits = await limitsOf(viaProxy.id);
    const rateLimitHeaders = (res: Response) => ({
      policy: res.headers.get('ratelimit-policy'),
      ratelimit: res.headers.get('ratelimit'),
    });
    for (const [answerer, key] of [
      ['express', viaExpress],
      ['fastify', viaFastify],
    ] as const) {
      const answer: VerifyAnswer = {
        valid: true,
        code: 'ok',
        consumerApiKeyId: key.id,
        name: key.name,
        limits,
      };
      double.answer(key.secret, answer);
      const res = await fetch(answerers[answerer] + '/v1/items', { headers: bearer(key.secret) });
      expect({ answerer, status: res.status, ...rateLimitHeaders(res) }).toEqual({
        answerer,
        status: 200,
        ...rateLimitHeaders(proxied),
      });
      expect(await res.json()).toEqual({
        reached: true,
        tollgate: expect.objectContaining({ valid: true, code: 'ok', consumerApiKeyId: key.id, limits }),
      });
    }
    expect(rateLimitHeaders(proxied)).toEqual({
      policy: '"day";q=10;w=86400',
      ratelimit: expect.stringMatching(/^"day";r=9;t=\d+$/),
    });
  });

  // Inspects what the middleware sends, so it stays on the double; when verify lands it checks the
  // key's usage instead (the path under `endpoints`, the customer under `usageByCustomer`).
  it('is verified with its path (no query), method, customer id (UTF-8) and client address', async () => {
    const key = await createKey({});
    double.answer(key.secret, { valid: true, code: 'ok', consumerApiKeyId: key.id, limits: [] });
    // Header bytes are UTF-8 on the wire; fetch takes them as Latin-1 characters, one per byte.
    const customer = Buffer.from('kunde-ü', 'utf8').toString('latin1');
    for (const url of Object.values(answerers)) {
      const res = await fetch(url + '/v1/orders/7?expand=lines', {
        method: 'DELETE',
        headers: { ...bearer(key.secret), 'x-customer-id': customer },
      });
      expect(res.status).toBe(200);
      expect(double.calls.at(-1)).toEqual({
        key: key.secret,
        path: '/v1/orders/7',
        method: 'DELETE',
        customerId: 'kunde-ü',
        clientAddress: '127.0.0.1',
      });
    }
  });
});

it('a failing verify admits nothing: Express passes the error to next, Fastify answers 500', async () => {
  const wrongToken = await startApps({ baseUrl: verifyBaseUrl(), token: 'not-the-token' });
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
  // The throttle counts per minute: start early enough in one to compare within it.
  if (Date.now() % 60_000 > 55_000) await sleep(60_000 - (Date.now() % 60_000) + 10);
  let status = 0;
  for (let attempt = 0; attempt < 150 && status !== 429; attempt++)
    status = (await fetch(tollgate.url + '/v1/items', { headers: wrongKey() })).status;
  expect(status).toBe(429);
  const headers = wrongKey();
  const answers = await refusalsTo(headers, () => {
    const now = Date.now();
    double.answer(headers.authorization.slice(7), {
      valid: false,
      code: 'too_many_failed_attempts',
      limits: [],
      retryAfterSeconds: secondsUntil(windowAt('minute', now).end, now),
    });
  });
  expectSameAsProxy(answers, 429, 'too_many_failed_attempts');
});
