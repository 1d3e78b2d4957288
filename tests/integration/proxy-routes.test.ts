/**
 * Proxied requests through the route table (docs/guides/routes.md), with real backends on 127.0.0.1:
 * each route's backend, its prefix stripped, its timeout; hosts and methods; the catch-all or 404
 * route_not_found; changes at run time; WebSocket upgrades; the `route` label of the metrics.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness, RecordingBackend } from '../helpers/proxy-harness.js';

const START_MS = 120_000;

afterAll(closeDatabase);

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** A proxied request with any Host header (fetch cannot set one). */
function send(
  port: number,
  path: string,
  options: { secret?: string; host?: string; method?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: options.host ?? `127.0.0.1:${port}` };
    if (options.secret !== undefined) headers.authorization = `Bearer ${options.secret}`;
    const req = httpRequest(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Tollgate with two more backends besides its catch-all, and routes made through the management API. */
class RoutedHarness extends ProxyHarness {
  readonly search = new RecordingBackend();
  readonly lookup = new RecordingBackend();
  searchPort = 0;
  lookupPort = 0;

  async startRouted(env: Record<string, string> = {}): Promise<this> {
    [this.searchPort, this.lookupPort] = await Promise.all([this.search.listen(), this.lookup.listen()]);
    return this.start({ upstreamTimeoutMs: 5_000, env });
  }

  async stopRouted(): Promise<void> {
    await this.stop();
    await Promise.all([this.search.close(), this.lookup.close()]);
  }

  async api(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(this.base + path, {
      method,
      headers: {
        authorization: `Bearer ${this.rootToken}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  }

  async createRoute(route: Record<string, unknown>): Promise<void> {
    const res = await this.api('POST', '/tollgate/routes', route);
    if (res.status !== 201) throw new Error(`route not created: ${res.status} ${await res.text()}`);
  }

  /** Waits until the table in force sends `path` to `backend` (the change reaches the proxy within 1 s), then forgets the probes. */
  async routedTo(
    path: string,
    secret: string,
    backend: RecordingBackend,
    options: { host?: string; method?: string } = {},
  ): Promise<number> {
    const { ms } = await waitFor(
      async () => {
        const before = backend.received.length;
        await send(this.port, path, { secret, ...options });
        return backend.received.length > before;
      },
      (reached) => reached,
      { timeoutMs: 2_000, everyMs: 20, what: `${path} reaching its backend` },
    );
    for (const b of [this.backend, this.search, this.lookup]) b.received.length = 0;
    return ms;
  }
}

describe('proxy: routes to several backends', () => {
  const h = new RoutedHarness();
  let secret: string;
  let keyId: string;
  beforeAll(async () => {
    await h.startRouted();
    ({ secret, id: keyId } = await h.createKey());
    await h.createRoute({
      routeId: 'search',
      match: { pathPrefix: '/v1/search' },
      upstreamUrl: `http://127.0.0.1:${h.searchPort}/base`,
      stripPrefix: true,
    });
    await h.createRoute({
      routeId: 'lookup',
      match: { pathPrefix: '/v1' },
      upstreamUrl: `http://127.0.0.1:${h.lookupPort}`,
    });
    expect(await h.routedTo('/v1/search', secret, h.search)).toBeLessThan(1_000);
    await h.routedTo('/v1/x', secret, h.lookup);
  }, START_MS);
  afterAll(() => h.stopRouted());

  it('sends each request to the backend of the longest matching prefix, stripped where the route says, the rest to UPSTREAM_URL', async () => {
    const answers = await Promise.all(
      ['/v1/search/items?q=7', '/v1/search', '/v1/lookup/7', '/v10/other', '/v1'].map((path) =>
        send(h.port, path, { secret }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(h.search.received.map((r) => r.url).sort()).toEqual(['/base/', '/base/items?q=7']);
    expect(h.lookup.received.map((r) => r.url).sort()).toEqual(['/v1', '/v1/lookup/7']);
    expect(h.backend.received.map((r) => r.url)).toEqual(['/v10/other']);
    // Each backend gets the key's headers, as the catch-all does.
    expect(h.search.received[0]!.headers['x-consumer-api-key-id']).toBe(keyId);
    expect(h.search.received[0]!.headers.authorization).toBeUndefined();
    // Usage counts requests by the path the client sent, whichever backend served them.
    expect((await h.usage(keyId)).endpoints).toEqual(
      expect.arrayContaining(['/v1/search/items', '/v1/lookup/7', '/v10/other']),
    );
  });

  it("answers 504 after the route's own timeout, not UPSTREAM_TIMEOUT_MS", async () => {
    await h.createRoute({
      routeId: 'quick',
      match: { pathPrefix: '/quick' },
      upstreamUrl: `http://127.0.0.1:${h.lookupPort}`,
      timeoutMs: 300,
    });
    await h.routedTo('/quick/probe', secret, h.lookup);
    h.lookup.slowMs = 3_000;
    const started = performance.now();
    const answer = await send(h.port, '/quick/slow', { secret });
    const took = performance.now() - started;
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'gateway_timeout' });
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(2_000);
    // The catch-all keeps UPSTREAM_TIMEOUT_MS (5 s): a 1 s answer comes through.
    h.backend.slowMs = 1_000;
    expect((await send(h.port, '/elsewhere/slow', { secret })).status).toBe(200);
  });

  it('routes by host, exact before wildcard before none, and narrows by method', async () => {
    await h.createRoute({
      routeId: 'wild',
      match: { host: '*.example.com', pathPrefix: '/h' },
      upstreamUrl: `http://127.0.0.1:${h.searchPort}`,
    });
    await h.createRoute({
      routeId: 'exact',
      match: { host: 'api.example.com', pathPrefix: '/h', methods: ['GET'] },
      upstreamUrl: `http://127.0.0.1:${h.lookupPort}`,
    });
    await h.routedTo('/h', secret, h.lookup, { host: 'api.example.com' });
    await h.routedTo('/h', secret, h.search, { host: 'web.example.com' });
    expect((await send(h.port, '/h/1', { secret, host: 'API.example.com:443' })).status).toBe(200);
    expect((await send(h.port, '/h/2', { secret, host: 'api.example.com', method: 'POST' })).status).toBe(
      200,
    );
    expect((await send(h.port, '/h/3', { secret, host: 'example.com' })).status).toBe(200);
    expect(h.lookup.received.map((r) => r.url)).toEqual(['/h/1']);
    // POST is not the exact route's: the wildcard takes it.
    expect(h.search.received.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /h/2']);
    expect(h.backend.received.map((r) => r.url)).toEqual(['/h/3']);
  });

  it('takes changes at run time: a request in flight finishes on the route it started on', async () => {
    // An origin of its own (the same server by another name): its pool is retired by the change.
    await h.createRoute({
      routeId: 'moving',
      match: { pathPrefix: '/moving' },
      upstreamUrl: `http://localhost:${h.searchPort}`,
    });
    await h.routedTo('/moving', secret, h.search);
    h.search.slowMs = 600;
    const inFlight = send(h.port, '/moving/slow', { secret });
    await waitFor(
      async () => h.search.received.length,
      (n) => n > 0,
    );
    expect(
      (await h.api('PATCH', '/tollgate/routes/moving', { upstreamUrl: `http://127.0.0.1:${h.lookupPort}` }))
        .status,
    ).toBe(200);
    await h.routedTo('/moving/next', secret, h.lookup);
    expect(await inFlight).toEqual({ status: 200, body: 'late' });
    expect((await h.api('DELETE', '/tollgate/routes/moving')).status).toBe(200);
    await h.routedTo('/moving/after', secret, h.backend);
  });

  it('proxies WebSocket upgrades by the same routes', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${h.port}/v1/search/socket?room=1`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const echoed = new Promise((resolve) => ws.once('message', (data) => resolve(String(data))));
    ws.send('routed');
    expect(await echoed).toBe('routed');
    ws.close();
    expect(h.search.upgrades.at(-1)!.url).toBe('/base/socket?room=1');
  });

  it('labels the route metrics with route ids and catch-all, never paths', async () => {
    await send(h.port, '/v1/search/metrics-probe', { secret });
    await send(h.port, '/not-routed/metrics-probe', { secret });
    const text = await h.metric('tollgate_route_requests_total');
    expect(text).toMatch(/tollgate_route_requests_total\{route="search",status="2xx"\} \d+/);
    expect(text).toMatch(/tollgate_route_requests_total\{route="catch-all",status="2xx"\} \d+/);
    expect(text).toMatch(/tollgate_route_requests_total\{route="quick",status="5xx"\} 1/);
    expect(text).not.toContain('metrics-probe');
  });
});

describe('proxy: routes without a catch-all (UPSTREAM_URL="")', () => {
  const h = new RoutedHarness();
  beforeAll(async () => {
    await h.startRouted({ UPSTREAM_URL: '' });
  }, START_MS);
  afterAll(() => h.stopRouted());

  it('refuses a request no route takes with 404 route_not_found: not forwarded, no quota spent, counted as failed', async () => {
    const key = await h.createKey({ limit: 1, period: 'hour' });
    const refused = await send(h.port, '/v2/anything', { secret: key.secret });
    expect(refused.status).toBe(404);
    expect(JSON.parse(refused.body)).toEqual({ error: 'No route found', code: 'route_not_found' });
    // Unknown keys learn nothing of the table: authentication comes first.
    expect((await send(h.port, '/v2/anything', { secret: 'tg_wrong' })).status).toBe(401);
    expect((await send(h.port, '/v2/anything')).status).toBe(401);

    await h.createRoute({
      routeId: 'v2',
      match: { pathPrefix: '/v2' },
      upstreamUrl: `http://127.0.0.1:${h.searchPort}`,
    });
    // The one request of the hour is still there: the refusal spent none. Once routed, it is taken.
    const { value } = await waitFor(
      () => send(h.port, '/v2/anything', { secret: key.secret }),
      (a) => a.status !== 404,
      { timeoutMs: 2_000, everyMs: 20 },
    );
    expect(value.status).toBe(200);
    expect((await send(h.port, '/v2/anything', { secret: key.secret })).status).toBe(429);
    expect(h.search.received).toHaveLength(1);
    const usage = await h.usage(key.id);
    expect(usage.failed).toBeGreaterThanOrEqual(2);
    expect(usage.successful).toBe(1);
    // By route: the 404s under none (null), the answer and the 429 under the route that took them.
    expect(usage.routes).toContainEqual(['v2', 2]);
    expect(usage.routes.find(([routeId]) => routeId === null)?.[1]).toBe(usage.requests - 2);
    expect(await h.metric('tollgate_route_requests_total{route="none"')).toMatch(/status="4xx"\} [1-9]/);
    expect(await h.metric('tollgate_proxy_requests_total{outcome="no_route"}')).toMatch(/ [1-9]/);
  });
});

describe('proxy: plans that know the route', () => {
  const h = new RoutedHarness();
  beforeAll(async () => {
    await h.startRouted();
    // The file's harnesses share one database: these routes are this block's own.
    for (const [routeId, port] of [
      ['search', h.searchPort],
      ['lookup', h.lookupPort],
    ] as const)
      await h.createRoute({
        routeId: `priced-${routeId}`,
        match: { pathPrefix: `/v3/${routeId}` },
        upstreamUrl: `http://127.0.0.1:${port}`,
      });
    const { secret } = await h.createKey();
    await h.routedTo('/v3/search', secret, h.search);
    await h.routedTo('/v3/lookup', secret, h.lookup);
  }, START_MS);
  afterAll(() => h.stopRouted());

  async function keyOf(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
    const res = await h.api('POST', '/consumer-api-key/create', { name: 'priced', ...body });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; secret: string };
  }

  it('refuses a key on a route it is not allowed, and on the catch-all, with 403 route_not_allowed: not forwarded, not charged, counted as failed under the route it asked for', async () => {
    const key = await keyOf({ allowedRouteIds: ['priced-search'] });
    const refusals = await Promise.all(
      ['/v3/lookup/7', '/elsewhere'].map((path) => send(h.port, path, { secret: key.secret })),
    );
    expect(refusals.map((a) => a.status)).toEqual([403, 403]);
    expect(JSON.parse(refusals[0]!.body)).toEqual({
      error: 'The API key is not allowed on this route',
      code: 'route_not_allowed',
    });
    expect((await send(h.port, '/v3/search/7', { secret: key.secret })).status).toBe(200);
    expect(h.lookup.received).toEqual([]);
    expect(h.backend.received).toEqual([]);
    const usage = await h.usage(key.id);
    expect(usage).toMatchObject({ requests: 3, successful: 1, failed: 2, cost: 1 });
    expect(usage.outcomes.routeNotAllowed).toBe(2);
    expect(usage.routes).toEqual([
      [null, 1],
      ['priced-lookup', 1],
      ['priced-search', 1],
    ]);
    expect(await h.metric('tollgate_proxy_requests_total{outcome="route_not_allowed"}')).toMatch(/ 2$/);
  });

  it('counts a limit with a match only for the requests it matches, and charges each request its cost in every limit', async () => {
    const rateLimitId = 'priced-' + Date.now();
    const plan = await h.api('POST', '/rate-limit/create', {
      rateLimitId,
      limits: [
        { name: 'searches', limit: 10, period: 'minute', match: { routeIds: ['priced-search'] } },
        { name: 'all', limit: 12, period: 'minute' },
      ],
      costs: [{ match: { routeIds: ['priced-search'] }, cost: 5 }],
    });
    expect(plan.status).toBe(201);
    const key = await keyOf({ rateLimitId });
    const call = async (path: string) => {
      const a = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
        (resolve, reject) => {
          const req = httpRequest(
            { host: '127.0.0.1', port: h.port, path, headers: { 'x-api-key': key.secret } },
            (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
            },
          );
          req.on('error', reject);
          req.end();
        },
      );
      return {
        status: a.status,
        policy: a.headers['ratelimit-policy'],
        limit: a.headers['ratelimit'],
        body: a.body,
      };
    };
    // Two searches of 5 units fill `searches` (10) and take 10 of `all` (12).
    expect(await call('/v3/search/1')).toMatchObject({
      status: 200,
      policy: '"searches";q=10;w=60, "all";q=12;w=60',
      limit: expect.stringMatching(/^"searches";r=5;t=\d+$/),
    });
    expect((await call('/v3/search/2')).status).toBe(200);
    const third = await call('/v3/search/3');
    expect(third.status).toBe(429);
    expect(JSON.parse(third.body)).toMatchObject({
      code: 'rate_limit_exceeded',
      name: 'searches',
      scope: 'key',
    });
    // A lookup costs 1 and only `all` counts it: 2 units remain there.
    const lookups = [await call('/v3/lookup/1'), await call('/v3/lookup/2'), await call('/v3/lookup/3')];
    expect(lookups.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(lookups[0]!.policy).toBe('"all";q=12;w=60');
    expect(JSON.parse(lookups[2]!.body)).toMatchObject({ name: 'all', limit: 12 });
    expect(h.search.received.filter((r) => r.headers['x-consumer-api-key-id'] === key.id)).toHaveLength(2);
    const usage = await h.usage(key.id);
    expect(usage).toMatchObject({ requests: 6, successful: 4, failed: 2, cost: 12 });
    expect(usage.outcomes.rateLimited).toBe(2);
  });
});
