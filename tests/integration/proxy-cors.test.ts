/**
 * Keys in a browser (docs/guides/browser.md), with a real Tollgate and real backends, in both modes:
 * a route's CORS policy (preflights answered without a key and never forwarded, the headers of every
 * answer, the backend's own replaced), CORS_ALLOWED_ORIGINS for the catch-all, a key's allowed origins
 * (Referer standing for a missing Origin) and addresses (CIDR, IPv4 and IPv6), refused without being
 * forwarded or charged and counted in usage, and verify's `origin`.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness, RecordingBackend } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const PAGE = 'https://app.example.com';

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly raw: string[];
  readonly body: string;
}

function send(
  port: number,
  path: string,
  method = 'GET',
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, raw: res.rawHeaders, body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** How many times a response carries a header (case-insensitive). */
const countOf = (answer: Answer, name: string): number =>
  answer.raw.filter((_, i) => i % 2 === 0 && answer.raw[i]!.toLowerCase() === name).length;

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  const api = new RecordingBackend();
  let stop: () => Promise<void>;
  let apiPort = 0;

  const call = (method: string, path: string, body?: unknown) =>
    fetch(h.base + path, {
      method,
      headers: {
        authorization: `Bearer ${h.rootToken}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });

  async function createKey(settings: Record<string, unknown>): Promise<{ id: string; secret: string }> {
    const res = await call('POST', '/consumer-api-key/create', { name: 'browser', ...settings });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: string; secret: string };
    return created;
  }

  /** Waits until the route table in force answers `path`'s preflight itself. */
  async function policyInForce(path: string): Promise<void> {
    const { value } = await waitFor(
      () => send(h.port, path, 'OPTIONS', { origin: PAGE, 'access-control-request-method': 'GET' }),
      // Before the table is read, the catch-all's policy answers: 204 without the route's headers.
      (a) => a.headers['access-control-allow-origin'] !== undefined,
      { timeoutMs: 2_000, everyMs: 20 },
    );
    expect(value.status).toBe(204);
  }

  beforeAll(async () => {
    apiPort = await api.listen();
    // Redis expires a window's count at its end: the fixed clock of the harness lies in the past.
    h.realTime = true;
    stop = await mode.start(h, {
      env: { CORS_ALLOWED_ORIGINS: 'https://catch-all.example.com', TRUST_PROXY: '1' },
    });
    for (const route of [
      {
        routeId: 'web',
        match: { pathPrefix: '/web' },
        upstreamUrl: `http://127.0.0.1:${apiPort}`,
        cors: { allowedOrigins: [PAGE, 'https://*.example.org'], exposedHeaders: ['x-backend'] },
      },
      { routeId: 'plain', match: { pathPrefix: '/plain' }, upstreamUrl: `http://127.0.0.1:${apiPort}` },
      {
        routeId: 'reads',
        match: { pathPrefix: '/reads', methods: ['GET', 'HEAD'] },
        upstreamUrl: `http://127.0.0.1:${apiPort}`,
        cors: { allowedOrigins: [PAGE], allowCredentials: true, maxAgeSeconds: 0 },
      },
      {
        routeId: 'gone',
        match: { pathPrefix: '/gone' },
        upstreamUrl: 'http://127.0.0.1:9',
        cors: { allowedOrigins: ['*'] },
      },
    ]) {
      const res = await call('POST', '/tollgate/routes', route);
      expect(res.status).toBe(201);
    }
    await policyInForce('/web/items');
    await policyInForce('/gone/items');
  }, 60_000);

  afterAll(async () => {
    await stop?.();
    await api.close();
  });

  it('shows a route policy with its defaults, and refuses one that is not valid', async () => {
    const route = (await (await call('GET', '/tollgate/routes/web')).json()) as { cors: unknown };
    expect(route.cors).toEqual({
      allowedOrigins: [PAGE, 'https://*.example.org'],
      allowedHeaders: [],
      exposedHeaders: ['x-backend'],
      allowCredentials: false,
      maxAgeSeconds: 600,
    });
    for (const cors of [
      { allowedOrigins: [] },
      { allowedOrigins: ['ftp://x.example'] },
      { allowedOrigins: [PAGE], maxAgeSeconds: 86_401 },
    ]) {
      const res = await call('PATCH', '/tollgate/routes/web', { cors });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe('validation_failed');
    }
  });

  it('refuses a route wildcard over a public suffix, by the Public Suffix List', async () => {
    for (const origin of ['https://*.com', 'https://*.co.uk', 'https://*.github.io:8443']) {
      const res = await call('PATCH', '/tollgate/routes/web', { cors: { allowedOrigins: [PAGE, origin] } });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: 'validation_failed',
        details: [{ field: 'cors.allowedOrigins[1]', message: expect.stringContaining('public suffix') }],
      });
    }
  });

  /** Preflights counted so far by origin: `policyInForce` has sent a number of its own. */
  async function preflights(): Promise<{ allowed: number; refused: number }> {
    const text = await h.metric('tollgate_cors_preflights_total');
    const count = (origin: string) => Number(new RegExp(`origin="${origin}"} (\\d+)`).exec(text)?.[1] ?? 0);
    return { allowed: count('allowed'), refused: count('refused') };
  }

  it('answers a preflight itself: no key, nothing forwarded, counted', async () => {
    api.received.length = 0;
    const before = await preflights();
    const allowed = await send(h.port, '/web/items', 'OPTIONS', {
      origin: PAGE,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    });
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe(PAGE);
    expect(allowed.headers['access-control-allow-methods']).toContain('POST');
    expect(allowed.headers['access-control-allow-headers']).toBe(
      'authorization, x-api-key, content-type, x-customer-id',
    );
    expect(allowed.headers['access-control-max-age']).toBe('600');
    expect(allowed.headers.vary).toBe('Origin');
    const wildcard = await send(h.port, '/web/items', 'OPTIONS', {
      origin: 'https://shop.eu.example.org',
      'access-control-request-method': 'GET',
    });
    expect(wildcard.headers['access-control-allow-origin']).toBe('https://shop.eu.example.org');

    for (const origin of ['https://evil.example.com', 'https://example.org', 'http://app.example.com']) {
      const refused = await send(h.port, '/web/items', 'OPTIONS', {
        origin,
        'access-control-request-method': 'GET',
      });
      expect(refused.status).toBe(204);
      expect(Object.keys(refused.headers).filter((n) => n.startsWith('access-control-allow'))).toEqual([]);
    }
    expect(api.received).toEqual([]);
    expect(await preflights()).toEqual({ allowed: before.allowed + 2, refused: before.refused + 3 });

    // The catch-all's policy (CORS_ALLOWED_ORIGINS) answers for paths no route takes.
    const catchAll = await send(h.port, '/elsewhere', 'OPTIONS', {
      origin: 'https://catch-all.example.com',
      'access-control-request-method': 'GET',
    });
    expect(catchAll.status).toBe(204);
    expect(catchAll.headers['access-control-allow-origin']).toBe('https://catch-all.example.com');
    expect(h.backend.received).toEqual([]);
  });

  it('answers a preflight by the policy of the route its requested method takes, not OPTIONS', async () => {
    await policyInForce('/reads/x');
    const answer = await send(h.port, '/reads/x', 'OPTIONS', {
      origin: PAGE,
      'access-control-request-method': 'GET',
    });
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(PAGE);
    expect(answer.headers['access-control-allow-methods']).toBe('GET, HEAD');
    expect(answer.headers['access-control-allow-credentials']).toBe('true');
    expect(answer.headers['access-control-max-age']).toBe('0');
  });

  it('treats a preflight on a route without a policy as any other request (401 without a key)', async () => {
    const answer = await send(h.port, '/plain/items', 'OPTIONS', {
      origin: PAGE,
      'access-control-request-method': 'GET',
    });
    expect(answer.status).toBe(401);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });

  it("lets an allowed page read every answer, replacing the backend's own Access-Control headers", async () => {
    const { secret } = await createKey({});
    api.hook = (_req, res) => {
      res.writeHead(200, {
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': 'true',
        'access-control-expose-headers': 'x-secret',
        'x-backend': 'yes',
      });
      res.end('{}');
    };
    const forwarded = await send(h.port, '/web/hooked', 'GET', { origin: PAGE, 'x-api-key': secret });
    expect(forwarded.status).toBe(200);
    expect(countOf(forwarded, 'access-control-allow-origin')).toBe(1);
    expect(forwarded.headers['access-control-allow-origin']).toBe(PAGE);
    expect(forwarded.headers['access-control-allow-credentials']).toBeUndefined();
    expect(forwarded.headers['access-control-expose-headers']).toBe(
      'ratelimit, ratelimit-policy, retry-after, x-request-id, x-backend',
    );
    expect(forwarded.headers.vary).toBe('Origin');

    // An origin the policy does not allow gets no Access-Control header, the backend's neither.
    const other = await send(h.port, '/web/hooked', 'GET', {
      origin: 'https://evil.example.com',
      'x-api-key': secret,
    });
    expect(other.status).toBe(200);
    expect(Object.keys(other.headers).filter((n) => n.startsWith('access-control-'))).toEqual([]);

    // Tollgate's own answers: a 401, and a 502 of a backend that is gone.
    const unauthorized = await send(h.port, '/web/items', 'GET', { origin: PAGE });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers['access-control-allow-origin']).toBe(PAGE);
    const badGateway = await send(h.port, '/gone/items', 'GET', { origin: PAGE, 'x-api-key': secret });
    expect(badGateway.status).toBe(502);
    expect(badGateway.headers['access-control-allow-origin']).toBe('*');
    expect(badGateway.headers['access-control-expose-headers']).toContain('x-request-id');
    // Without Origin, the backend's headers pass as they are.
    const server = await send(h.port, '/web/hooked', 'GET', { 'x-api-key': secret });
    expect(server.headers['access-control-allow-origin']).toBe('*');
  });

  it("settles a page's usage-priced request from the fields its answer reached the page with", async () => {
    /** A key on a plan of 1,000 tokens a day whose requests reserve 500 and settle from `header`. */
    const keyReading = async (header: string) => {
      const rate = 'tokens-' + Math.random().toString(36).slice(2, 8);
      const plan = await call('POST', '/rate-limit/create', {
        rateLimitId: rate,
        unit: 'tokens',
        limits: [{ limit: 1_000, period: 'day' }],
        costs: [{ match: { pathPrefix: '/web' }, cost: 500, settle: { header } }],
      });
      expect(plan.status).toBe(201);
      return createKey({ rateLimitId: rate });
    };
    const usageOnceSettled = async (id: string, remaining: number) =>
      (
        await waitFor(
          async () =>
            (
              (await (await call('GET', `/consumer-api-key/${id}`)).json()) as {
                usage: { unsettled: number; rateLimits: { limits: { remaining: number }[] } };
              }
            ).usage,
          (u) => u.rateLimits.limits[0]!.remaining === remaining,
          { timeoutMs: 5_000, everyMs: 20 },
        )
      ).value;
    api.hook = (_req, res) => {
      res.writeHead(200, { 'access-control-allow-origin': '*', 'access-control-units': '7', 'x-units': '7' });
      res.end('{}');
    };
    const reading = await keyReading('x-units');
    const answered = await send(h.port, '/web/hooked', 'GET', { origin: PAGE, 'x-api-key': reading.secret });
    expect(answered.status).toBe(200);
    expect(answered.headers['access-control-allow-origin']).toBe(PAGE);
    expect(answered.headers['x-units']).toBe('7');
    expect((await usageOnceSettled(reading.id, 993)).unsettled).toBe(0);

    // A backend Access-Control field the page never gets is not read either: the reservation stays.
    const dropped = await keyReading('access-control-units');
    const kept = await send(h.port, '/web/hooked', 'GET', { origin: PAGE, 'x-api-key': dropped.secret });
    expect(kept.headers['access-control-units']).toBeUndefined();
    expect((await usageOnceSettled(dropped.id, 500)).unsettled).toBe(1);
  });

  it('lets the page read a 429, its RateLimit headers exposed', async () => {
    const rate = 'plan-' + Math.random().toString(36).slice(2, 8);
    expect(
      (await call('POST', '/rate-limit/create', { rateLimitId: rate, limit: 1, period: 'hour' })).status,
    ).toBe(201);
    const { secret } = await createKey({ rateLimitId: rate });
    expect(
      (await send(h.port, '/web/a', 'GET', { origin: PAGE, authorization: `Bearer ${secret}` })).status,
    ).toBe(200);
    const limited = await send(h.port, '/web/a', 'GET', { origin: PAGE, authorization: `Bearer ${secret}` });
    expect(limited.status).toBe(429);
    expect(limited.headers['access-control-allow-origin']).toBe(PAGE);
    expect(limited.headers['access-control-expose-headers']).toContain('ratelimit');
    expect(limited.headers.ratelimit).toBeDefined();
  });

  it("refuses a key's request from another origin or address: not forwarded, not charged, counted", async () => {
    const rate = 'plan-' + Math.random().toString(36).slice(2, 8);
    expect(
      (await call('POST', '/rate-limit/create', { rateLimitId: rate, limit: 100, period: 'hour' })).status,
    ).toBe(201);
    const { id, secret } = await createKey({
      rateLimitId: rate,
      allowedOrigins: [PAGE, 'https://*.example.org'],
      allowedAddresses: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'],
    });
    const detail = (await (await call('GET', `/consumer-api-key/${id}`)).json()) as Record<string, unknown>;
    expect(detail.allowedOrigins).toEqual([PAGE, 'https://*.example.org']);
    expect(detail.allowedAddresses).toEqual(['10.0.0.0/8', '2001:db8::/32', '192.0.2.7']);
    const listed = (await (await call('GET', '/consumer-api-key?limit=100')).json()) as {
      apiKeys: { consumerApiKeyId: string; allowedOrigins: unknown }[];
    };
    expect(listed.apiKeys.find((k) => k.consumerApiKeyId === id)?.allowedOrigins).toEqual([
      PAGE,
      'https://*.example.org',
    ]);

    const from = (headers: Record<string, string>) =>
      send(h.port, '/plain/x', 'GET', { 'x-api-key': secret, 'x-forwarded-for': '10.1.2.3', ...headers });
    api.received.length = 0;
    expect((await from({ origin: PAGE })).status).toBe(200);
    expect((await from({ origin: 'https://a.b.example.org' })).status).toBe(200);
    expect((await from({ referer: `${PAGE}/page?q=1` })).status).toBe(200);
    for (const address of ['2001:db8::5', '::ffff:10.9.9.9', '192.0.2.7'])
      expect((await from({ origin: PAGE, 'x-forwarded-for': address })).status).toBe(200);
    expect(api.received).toHaveLength(6);

    const origin = [
      await from({ origin: 'https://evil.example.com' }),
      await from({ referer: 'https://evil.example.com/' }),
      await from({}),
    ];
    for (const refused of origin) {
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'origin_not_allowed' });
    }
    for (const address of ['11.0.0.1', '2001:db9::1', '192.0.2.8']) {
      const refused = await from({ origin: PAGE, 'x-forwarded-for': address });
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'address_not_allowed' });
    }
    expect(api.received).toHaveLength(6);
    // Only the six admitted were charged: the next answer reports 93 left of 100.
    const next = await from({ origin: PAGE });
    expect(next.headers.ratelimit).toMatch(/r=93/);

    const usage = await waitFor(
      () => h.usage(id),
      (u) => u.requests === 13,
      { timeoutMs: 5_000, everyMs: 100 },
    );
    expect(usage.value).toMatchObject({ requests: 13, successful: 7, failed: 6, cost: 7 });
    expect(usage.value.outcomes).toMatchObject({ originNotAllowed: 3, addressNotAllowed: 3 });

    // A PATCH lifts the restriction; null means anywhere.
    expect(
      (await call('PATCH', `/consumer-api-key/${id}`, { allowedOrigins: null, allowedAddresses: null }))
        .status,
    ).toBe(200);
    await waitFor(
      () => from({ origin: 'https://evil.example.com', 'x-forwarded-for': '11.0.0.1' }),
      (a) => a.status === 200,
      {
        timeoutMs: 2_000,
        everyMs: 20,
      },
    );
  });

  it('refuses addresses and origins that are none', async () => {
    for (const settings of [
      { allowedAddresses: ['10.0.0.0/33'] },
      { allowedAddresses: ['example.com'] },
      // A prefix with a leading zero: some parsers read `08` as octal.
      { allowedAddresses: ['1.2.3.4/08'] },
      { allowedAddresses: ['2001:db8::/032'] },
      { allowedOrigins: ['*'] },
      { allowedOrigins: [] },
      { allowedOrigins: ['https://*.com'] },
      { allowedOrigins: [PAGE, 'https://*.co.uk'] },
    ]) {
      const res = await call('POST', '/consumer-api-key/create', { name: 'x', ...settings });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe('validation_failed');
    }
    // A wildcard under a registrable domain, or under a suffix the list does not name, is one's own.
    for (const origin of ['https://*.example.co.uk', 'http://*.localhost:5173']) {
      const res = await call('POST', '/consumer-api-key/create', { name: 'x', allowedOrigins: [origin] });
      expect(res.status).toBe(201);
    }
  });

  it("verify decides a key's origin and address as the proxy does", async () => {
    const { secret } = await createKey({ allowedOrigins: [PAGE], allowedAddresses: ['203.0.113.0/24'] });
    const verify = async (body: Record<string, unknown>) =>
      ((await (await call('POST', '/tollgate/verify', { key: secret, ...body })).json()) as { code: string })
        .code;
    expect(await verify({ origin: PAGE, clientAddress: '203.0.113.9' })).toBe('ok');
    expect(await verify({ clientAddress: '203.0.113.9' })).toBe('origin_not_allowed');
    expect(await verify({ origin: 'https://evil.example.com', clientAddress: '203.0.113.9' })).toBe(
      'origin_not_allowed',
    );
    expect(await verify({ origin: PAGE })).toBe('address_not_allowed');
    expect(await verify({ origin: PAGE, clientAddress: '198.51.100.1' })).toBe('address_not_allowed');
  });
});
