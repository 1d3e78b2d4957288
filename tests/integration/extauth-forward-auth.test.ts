/**
 * Forward auth on EXTAUTH_PORT as each gateway calls it (docs/guides/external-authorization.md): the
 * original method and path from Caddy's and Traefik's headers, nginx's, or the call itself (Envoy);
 * the client from the end of X-Forwarded-For; the proxy's own decision and answers (200 with the
 * headers for the backend: the key, its consumer, a token's `sub`; 401, 403, 429 with Retry-After); counted in usage as the proxy counts,
 * under the original path without its query; a concurrency place held for CONCURRENCY_LEASE_SECONDS;
 * 400 invalid_request_target for a target no request line carries or two conventions that disagree.
 * In both modes.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mintToken } from '../../packages/client/src/generated/mint-token.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly text: string;
}

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;

  beforeAll(async () => {
    stop = await mode.start(h, { env: { EXTAUTH_PORT: '0', CONCURRENCY_LEASE_SECONDS: '1' } });
    // A minute that has not begun: Redis keeps its windows until they end by the real clock.
    h.now = (Math.floor(Date.now() / 60_000) + 1) * 60_000 + 10;
  }, 60_000);
  afterAll(() => stop?.());

  /** A gateway's authorization call: its own path, and the headers it passes. */
  const ask = async (headers: Record<string, string>, path = '/auth'): Promise<Answer> => {
    const res = await fetch(`http://127.0.0.1:${h.extauthPort}${path}`, { headers });
    return { status: res.status, headers: Object.fromEntries(res.headers), text: await res.text() };
  };
  /** The same, its headers a flat list of names and values sent as is: a name twice too, no Host added. */
  const askWith = (headers: string[]): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const call = request({ host: '127.0.0.1', port: h.extauthPort, path: '/auth', headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: {}, text }));
      });
      call.on('error', reject);
      call.end();
    });
  /** Its status and refusal code (none for an admission, whose body is empty). */
  const outcome = (answer: Answer) => [
    answer.status,
    answer.text === '' ? undefined : (JSON.parse(answer.text) as { code: string }).code,
  ];
  const created = async (path: string, body: unknown) => {
    const res = await fetch(h.base + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string; secret: string };
  };

  it('admits with 200, no body and the headers for the backend, forwards nothing, and counts a success under the original path without its query', async () => {
    const key = await h.createKey({ limit: 5, period: 'minute' });
    const forwardedBefore = h.backend.received.length;
    const answer = await ask({
      'x-api-key': key.secret,
      'x-forwarded-method': 'POST',
      'x-forwarded-uri': '/orders/7?page=2',
      'x-forwarded-for': '198.51.100.7',
    });
    expect(answer).toEqual({
      status: 200,
      text: '',
      headers: expect.objectContaining({
        'x-api-key': key.secret,
        'x-consumer-api-key-id': key.id,
        'ratelimit-policy': '"minute";q=5;w=60',
        ratelimit: expect.stringMatching(/^"minute";r=4;t=\d+$/),
      }),
    });
    expect(h.backend.received.length).toBe(forwardedBefore);
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 1,
    );
    expect([usage.value.successful, usage.value.cost, usage.value.endpoints]).toEqual([1, 1, ['/orders/7']]);
  });

  it("tells the backend the key's consumer in x-consumer-id", async () => {
    const res = await fetch(h.base + '/tollgate/consumers', {
      method: 'POST',
      headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'an account' }),
    });
    const { consumerId } = (await res.json()) as { consumerId: string };
    const key = await created('/consumer-api-key/create', { name: 'of an account', consumerId });
    const answer = await ask({ 'x-api-key': key.secret });
    expect([answer.status, answer.headers['x-consumer-id'], answer.headers['x-consumer-api-key-id']]).toEqual(
      [200, consumerId, key.id],
    );
  });

  it("admits a short-lived token as the proxy does: the backend gets the key's own secret and the token's `sub` as the customer id", async () => {
    const key = await h.createKey();
    const token = mintToken(key.secret, {
      consumerApiKeyId: key.id,
      expiresInSeconds: 600,
      nowMs: h.now,
      subject: 'customer-7',
    });
    const answer = await ask({ authorization: `Bearer ${token}`, 'x-customer-id': 'someone-else' });
    expect([answer.status, answer.headers['x-api-key'], answer.headers['x-customer-id']]).toEqual([
      200,
      key.secret,
      'customer-7',
    ]);
  });

  it("reads the original path from Caddy's and Traefik's headers, else nginx's, else the call's own (Envoy)", async () => {
    const key = await h.createKey({ limit: 10, period: 'minute' });
    const auth = `Bearer ${key.secret}`;
    await ask({ authorization: auth, 'x-forwarded-uri': '/caddy', 'x-forwarded-method': 'PUT' });
    await ask({ authorization: auth, 'x-original-uri': '/nginx?q=1', 'x-original-method': 'DELETE' });
    await ask({ authorization: auth }, '/envoy/path?x=1');
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 3,
    );
    expect(usage.value.endpoints.sort()).toEqual(['/caddy', '/envoy/path', '/nginx']);
  });

  it('refuses with 400 invalid_request_target a call whose X-Forwarded-* and X-Original-* name different paths or methods, and decides one where they agree', async () => {
    const key = await h.createKey({ limit: 10, period: 'minute' });
    // Behind nginx, a client's own X-Forwarded-Uri reaches Tollgate beside the X-Original-URI nginx set.
    const paths = await ask({
      'x-api-key': key.secret,
      'x-forwarded-uri': '/public/x',
      'x-original-uri': '/admin/secrets',
    });
    const methods = await ask({
      'x-api-key': key.secret,
      'x-forwarded-uri': '/admin/secrets',
      'x-forwarded-method': 'GET',
      'x-original-method': 'DELETE',
    });
    const agreeing = await ask({
      'x-api-key': key.secret,
      'x-forwarded-uri': '/agreed?a=1',
      'x-original-uri': '/agreed?a=1',
      'x-forwarded-method': 'get',
      'x-original-method': 'GET',
    });
    expect([outcome(paths), outcome(methods)]).toEqual(Array(2).fill([400, 'invalid_request_target']));
    expect([agreeing.status, agreeing.headers['x-api-key']]).toEqual([200, key.secret]);
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 1,
    );
    expect([usage.value.successful, usage.value.endpoints]).toEqual([1, ['/agreed']]);
  });

  it('refuses with 400 invalid_request_target a path no request line could carry (raw UTF-8, a space, a header sent twice), counting none of them', async () => {
    const key = await h.createKey({ limit: 10, period: 'minute' });
    // Node writes a header's text as latin1: this sends the raw UTF-8 bytes of /café/ā.
    const utf8 = Buffer.from('/café/ā').toString('latin1');
    const refused = [];
    for (const uris of [[utf8], ['/a b'], ['/m1', '/m2']])
      refused.push(
        await askWith([
          'host',
          'gateway',
          'x-api-key',
          key.secret,
          ...uris.flatMap((u) => ['x-forwarded-uri', u]),
        ]),
      );
    expect(refused.map(outcome)).toEqual(Array(3).fill([400, 'invalid_request_target']));
    expect((await ask({ 'x-api-key': key.secret, 'x-forwarded-uri': '/caf%C3%A9' })).status).toBe(200);
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 1,
    );
    expect(usage.value.endpoints).toEqual(['/caf%C3%A9']);
  });

  it("refuses as the proxy does: 401 with WWW-Authenticate for no key and a wrong one, 403 for a client outside the key's addresses, judged by the last X-Forwarded-For entry", async () => {
    const missing = await ask({ 'x-forwarded-uri': '/a' });
    expect([missing.status, missing.headers['www-authenticate'], JSON.parse(missing.text).code]).toEqual([
      401,
      'Bearer',
      'missing_api_key',
    ]);
    const wrong = await ask({ 'x-api-key': 'tg_' + randomBytes(32).toString('base64url') });
    expect([wrong.status, JSON.parse(wrong.text).code]).toEqual([401, 'invalid_api_key']);

    const key = await created('/consumer-api-key/create', {
      name: 'addresses',
      allowedAddresses: ['203.0.113.0/24'],
    });
    // The gateway appends the address it saw: entries before it are the client's own say.
    const inside = await ask({ 'x-api-key': key.secret, 'x-forwarded-for': '198.51.100.1, 203.0.113.9' });
    const planted = await ask({ 'x-api-key': key.secret, 'x-forwarded-for': '203.0.113.9, 198.51.100.1' });
    expect([inside.status, planted.status, JSON.parse(planted.text).code]).toEqual([
      200,
      403,
      'address_not_allowed',
    ]);
  });

  it("carries the route's CORS headers on a refusal for an allowed origin, as the proxy's refusals do, and decides a preflight as a request", async () => {
    const page = 'https://app.example.com';
    const res = await fetch(h.base + '/tollgate/routes', {
      method: 'POST',
      headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        routeId: 'web',
        match: { pathPrefix: '/web' },
        upstreamUrl: 'http://127.0.0.1:9',
        cors: { allowedOrigins: [page] },
      }),
    });
    expect(res.status).toBe(201);
    const refused = (origin: string) =>
      ask({ 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/web/items', origin });
    // Routes reach the listener with the next reload.
    const { value: allowed } = await waitFor(
      () => refused(page),
      (answer) => answer.headers['access-control-allow-origin'] === page,
    );
    expect([allowed.status, JSON.parse(allowed.text).code, allowed.headers.vary]).toEqual([
      401,
      'missing_api_key',
      'Origin',
    ]);
    expect(allowed.headers['access-control-expose-headers']).toContain('retry-after');
    const other = await refused('https://elsewhere.example');
    expect([other.status, other.headers['access-control-allow-origin'], other.headers.vary]).toEqual([
      401,
      undefined,
      'Origin',
    ]);
    // No route policy, no CORS headers.
    const plain = await ask({ 'x-forwarded-uri': '/plain', origin: page });
    expect([plain.status, plain.headers['access-control-allow-origin']]).toEqual([401, undefined]);
    // A gateway forwards what this listener admits: a preflight is a request here, which carries no key.
    const preflight = await ask({
      'x-forwarded-method': 'OPTIONS',
      'x-forwarded-uri': '/web/items',
      origin: page,
      'access-control-request-method': 'POST',
    });
    expect([preflight.status, JSON.parse(preflight.text).code]).toEqual([401, 'missing_api_key']);
  });

  it("refuses over the limit with 429, Retry-After, RateLimit and the proxy's body, and counts it rate limited", async () => {
    const key = await h.createKey({ limit: 2, period: 'minute' });
    const statuses: number[] = [];
    let refused: Answer | undefined;
    for (let i = 0; i < 3; i++) {
      const answer = await ask({ 'x-api-key': key.secret, 'x-original-uri': '/limited' });
      statuses.push(answer.status);
      if (answer.status === 429) refused = answer;
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(refused!.headers).toEqual(
      expect.objectContaining({
        'retry-after': expect.stringMatching(/^\d+$/),
        ratelimit: expect.stringMatching(/^"minute";r=0;t=\d+$/),
        'content-type': 'application/json; charset=utf-8',
      }),
    );
    expect(JSON.parse(refused!.text)).toEqual(
      expect.objectContaining({ code: 'rate_limit_exceeded', limit: 2, period: 'minute', remaining: 0 }),
    );
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 3,
    );
    expect([usage.value.successful, usage.value.failed, usage.value.outcomes.rateLimited]).toEqual([2, 1, 1]);
  });

  it('holds a concurrency place a decision took until CONCURRENCY_LEASE_SECONDS, then gives it back', async () => {
    const key = await h.createKey({ algorithm: 'concurrency', limit: 1 });
    const first = await ask({ 'x-api-key': key.secret });
    const second = await ask({ 'x-api-key': key.secret });
    expect([first.status, second.status, JSON.parse(second.text).code]).toEqual([
      200,
      429,
      'concurrency_limit_exceeded',
    ]);
    // The lease is 1 s here: the place comes back by itself, not before most of it has passed.
    const again = await waitFor(
      () => ask({ 'x-api-key': key.secret }),
      (a) => a.status === 200,
      { everyMs: 100 },
    );
    expect(again.ms).toBeGreaterThan(500);
  });
});
