import { randomBytes } from 'node:crypto';
import { request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ruleOf } from '../../src/plans/plan.js';
import type { Decision, LimitState, RateLimiter } from '../../src/limits/rate-limiter.js';
import { continueExchange } from '../helpers/continue-exchange.js';
import { FAILING_LIMITER, UNAVAILABLE_LIMITER } from '../helpers/failing-limiter.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness, rawRequest, sha256 } from '../helpers/proxy-harness.js';

/** Starting servers is slow on a busy machine. */
const START_MS = 120_000;

afterAll(closeDatabase);

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json: () => unknown;
}

function call(
  base: string,
  path: string,
  options: { method?: string; headers?: OutgoingHttpHeaders; body?: Buffer | string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // Node's client frames a DELETE body with neither Content-Length nor chunking unless told.
    const headers =
      options.body === undefined
        ? options.headers
        : { 'content-length': Buffer.byteLength(options.body), ...options.headers };
    const req = request(base + path, { method: options.method ?? 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body,
          json: () => JSON.parse(body.toString()),
        });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

describe('proxy: forwarding', () => {
  const h = new ProxyHarness();
  let key: { id: string; secret: string };

  beforeAll(async () => {
    await h.start({ upstreamPath: '/api/v1' });
    key = await h.createKey();
  }, START_MS);
  afterAll(() => h.stop());

  it('forwards to the upstream prefix + path + query, with x-api-key and the key id, and no Authorization', async () => {
    const before = h.backend.received.length;
    const res = await call(h.base, '/things/42?x=1&y=%20z&y=2', {
      headers: {
        ...bearer(key.secret),
        'x-api-key': 'forged',
        'x-consumer-api-key-id': 'key_forged',
        'x-custom': 'kept',
      },
    });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ ok: true, path: '/api/v1/things/42?x=1&y=%20z&y=2' });
    expect(h.backend.received).toHaveLength(before + 1);
    const got = h.backend.received.at(-1)!;
    expect(got.url).toBe('/api/v1/things/42?x=1&y=%20z&y=2');
    expect(got.headers['x-api-key']).toBe(key.secret);
    expect(got.headers['x-consumer-api-key-id']).toBe(key.id);
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['x-custom']).toBe('kept');
    // Client copies are replaced, not duplicated.
    expect(got.rawHeaders.filter((n) => n.toLowerCase() === 'x-api-key')).toHaveLength(1);
    expect(got.rawHeaders.filter((n) => n.toLowerCase() === 'x-consumer-api-key-id')).toHaveLength(1);
    expect(res.headers['x-backend']).toBe('yes');
  });

  it('accepts the key in x-api-key as well', async () => {
    const res = await call(h.base, '/via-header', { headers: { 'x-api-key': key.secret } });
    expect(res.status).toBe(200);
    expect(h.backend.received.at(-1)!.headers['x-api-key']).toBe(key.secret);
  });

  it('passes a sane x-request-id through both ways and generates one otherwise', async () => {
    const given = await call(h.base, '/rid', {
      headers: { ...bearer(key.secret), 'x-request-id': 'abc-123' },
    });
    expect(given.headers['x-request-id']).toBe('abc-123');
    expect(h.backend.received.at(-1)!.headers['x-request-id']).toBe('abc-123');

    const generated = await call(h.base, '/rid', {
      headers: { ...bearer(key.secret), 'x-request-id': 'bad id\twith junk' },
    });
    const id = generated.headers['x-request-id'] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(h.backend.received.at(-1)!.headers['x-request-id']).toBe(id);
  });

  it('strips hop-by-hop and Connection-named headers on the way in, and sets X-Forwarded-*', async () => {
    const answer = await rawRequest(
      h.port,
      [
        'GET /hop-in HTTP/1.1',
        'Host: tollgate.test',
        `Authorization: Bearer ${key.secret}`,
        'Connection: close, X-Hop-A, x-hop-b',
        'X-Hop-A: 1',
        'X-Hop-B: 2',
        'Keep-Alive: timeout=5',
        'TE: trailers',
        'Trailer: X-Checksum',
        'Upgrade: h2c',
        'Proxy-Authorization: Basic Zm9vOmJhcg==',
        'Proxy-Connection: keep-alive',
        'X-Forwarded-For: 6.6.6.6',
        'X-Forwarded-Host: spoofed.example',
        'X-Forwarded-Proto: https',
        'Forwarded: for=6.6.6.6',
        'X-End-To-End: kept',
        '',
        '',
      ].join('\r\n'),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const got = h.backend.received.at(-1)!;
    expect(got.url).toBe('/api/v1/hop-in');
    for (const name of [
      'x-hop-a',
      'x-hop-b',
      'keep-alive',
      'trailer',
      'upgrade',
      'proxy-authorization',
      'proxy-connection',
      'authorization',
      'forwarded',
    ]) {
      expect(got.headers[name]).toBeUndefined();
    }
    // The client accepts trailers: Tollgate asks the backend for them itself (docs/guides/operations.md, Bodies and transfers).
    expect(got.headers.te).toBe('trailers');
    expect(got.headers.connection).not.toMatch(/hop/i);
    expect(got.headers['x-end-to-end']).toBe('kept');
    // No trusted proxy in front (TRUST_PROXY unset): the peer is the client, whatever it claims.
    expect(got.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(got.headers['x-forwarded-proto']).toBe('http');
    expect(got.headers['x-forwarded-host']).toBe('tollgate.test');
    expect(got.headers.host).toBe(`127.0.0.1:${h.config.upstreamUrl!.port}`);
  });

  it('passes the backend trailers to a client that sent TE: trailers, and only to it', async () => {
    const head = (te: string) =>
      [
        'GET /trailers HTTP/1.1',
        'Host: tollgate.test',
        `Authorization: Bearer ${key.secret}`,
        'Connection: close',
        ...(te ? [`TE: ${te}`] : []),
        '',
        '',
      ].join('\r\n');
    const wanted = await rawRequest(h.port, head('trailers'));
    expect(wanted).toMatch(/^HTTP\/1\.1 200 /);
    expect(wanted).toMatch(/\r\nTrailer: X-Checksum\r\n/i);
    expect(wanted).toMatch(/\r\n0\r\nx-checksum: sha256=abc\r\n\r\n$/i);
    expect(h.backend.received.at(-1)!.headers.te).toBe('trailers');

    for (const te of ['', 'gzip']) {
      const plain = await rawRequest(h.port, head(te));
      expect(plain).toMatch(/^HTTP\/1\.1 200 /);
      expect(plain).not.toMatch(/trailer|x-checksum/i);
      // Any other TE stays hop-by-hop.
      expect(h.backend.received.at(-1)!.headers.te).toBeUndefined();
    }
  });

  it('sends 100 Continue only once the key is admitted; a refused client never sends its body', async () => {
    const exchange = (secret: string) =>
      continueExchange(
        h.port,
        [
          'POST /echo HTTP/1.1',
          'Host: tollgate.test',
          `Authorization: Bearer ${secret}`,
          'Content-Type: text/plain',
          'Content-Length: 5',
        ],
        'hello',
      );

    const admitted = await exchange(key.secret);
    expect(admitted.first).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    expect(admitted.final).toMatch(/^HTTP\/1\.1 200 /);
    expect(admitted.final).toMatch(/\r\n\r\n(5\r\n)?hello/);
    expect(h.backend.received.at(-1)!.headers.expect).toBeUndefined();

    const before = h.backend.received.length;
    const refused = await exchange('tg_' + 'x'.repeat(43));
    expect(refused.first).toMatch(/^HTTP\/1\.1 401 /);
    expect(refused.first).toMatch(/\r\nconnection: close\r\n/i);
    expect(refused.first).toContain('invalid_api_key');
    expect(h.backend.received.length).toBe(before);
  });

  it('strips hop-by-hop headers of the backend response', async () => {
    const res = await call(h.base, '/hop', { headers: bearer(key.secret) });
    expect(res.status).toBe(200);
    expect(res.headers['x-backend-private']).toBeUndefined();
    expect(res.headers['proxy-authenticate']).toBeUndefined();
    expect(res.headers['keep-alive']).not.toBe('timeout=5');
    expect(res.headers['x-end-to-end']).toBe('kept');
    expect(res.body.toString()).toBe('hop');
  });

  it('passes the backend status and body for errors too', async () => {
    const res = await call(h.base, '/status/418', { headers: bearer(key.secret) });
    expect(res.status).toBe(418);
    expect(res.json()).toEqual({ status: 418 });
  });

  it('forwards every method with its body intact', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const body = JSON.stringify({ method, n: Math.random() });
      const res = await call(h.base, `/m/${method}`, {
        method,
        headers: { ...bearer(key.secret), 'content-type': 'application/json' },
        body,
      });
      expect([method, res.status]).toEqual([method, 200]);
      const got = h.backend.received.at(-1)!;
      expect(got.method).toBe(method);
      expect(got.body.toString()).toBe(body);
      expect(got.headers['content-type']).toBe('application/json');
    }
  });

  it('streams a large body both ways unchanged (32 MiB, chunked upload)', async () => {
    const payload = randomBytes(32 * 1024 * 1024);
    const res = await new Promise<{ status: number; hash: string; size: number }>((resolve, reject) => {
      const req = request(
        `${h.base}/echo`,
        { method: 'POST', headers: { ...bearer(key.secret), 'content-type': 'application/octet-stream' } },
        (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => {
            const all = Buffer.concat(chunks);
            resolve({ status: r.statusCode!, hash: sha256(all), size: all.length });
          });
        },
      );
      req.on('error', reject);
      for (let i = 0; i < payload.length; i += 1024 * 1024) req.write(payload.subarray(i, i + 1024 * 1024));
      req.end();
    });
    expect(res.status).toBe(200);
    expect(res.size).toBe(payload.length);
    expect(res.hash).toBe(sha256(payload));
  });

  it('streams rather than buffers: the backend answers before the client has finished sending', async () => {
    // If either direction were buffered, each side would wait for the other: the test would time out.
    h.backend.hook = (req, res) => {
      req.once('data', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first;');
        req.on('end', () => res.end('last'));
        req.resume();
      });
    };
    const text = await new Promise<string>((resolve, reject) => {
      const req = request(`${h.base}/hooked`, { method: 'POST', headers: bearer(key.secret) }, (r) => {
        let seen = '';
        r.on('data', (c: Buffer) => {
          if (seen === '') req.end('rest of the body');
          seen += c.toString();
        });
        r.on('end', () => resolve(seen));
      });
      req.on('error', reject);
      req.write('start of the body;');
      req.flushHeaders();
    });
    expect(text).toBe('first;last');
    h.backend.hook = undefined;
  });

  it('cancels the backend request when the client goes away, and counts the request as failed', async () => {
    const fresh = await h.createKey();
    let backendSawClose!: () => void;
    const closed = new Promise<void>((resolve) => (backendSawClose = resolve));
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    h.backend.hook = (req) => {
      // Never answer: only the proxy giving up can close this request.
      req.socket.once('close', backendSawClose);
      arrived();
    };
    const req = request(`${h.base}/hooked`, { headers: bearer(fresh.secret) });
    req.on('error', () => undefined);
    req.end();
    await reached;
    const gone = Date.now();
    req.destroy();
    await closed;
    // Well before UPSTREAM_TIMEOUT_MS (2 s here) would have ended it.
    expect(Date.now() - gone).toBeLessThan(1_000);
    h.backend.hook = undefined;
    const { value: used } = await waitFor(
      () => h.usage(fresh.id),
      (u) => u.requests > 0,
    );
    expect(used).toMatchObject({ requests: 1, successful: 0, failed: 1 });
  });

  it('records usage per request path: backend statuses below 400 succeed, the rest fail; grouped by customer', async () => {
    const fresh = await h.createKey();
    const headers = { ...bearer(fresh.secret), 'x-customer-id': 'acme' };
    await call(h.base, '/u/ok?page=1', { headers });
    await call(h.base, '/u/ok?page=2', { headers: bearer(fresh.secret) });
    await call(h.base, '/status/404', { headers });
    await call(h.base, '/status/503', { headers });
    const usage = await h.usage(fresh.id);
    expect(usage).toMatchObject({ requests: 4, successful: 2, failed: 2, customers: { acme: 3 } });
    // Each admitted request costs 1; what the client got by class, and the backend's 5xx as its outcome.
    expect(usage).toMatchObject({
      cost: 4,
      statusClasses: { '2xx': 2, '3xx': 0, '4xx': 1, '5xx': 1 },
      outcomes: { backendError: 1, backendUnreachable: 0, rateLimited: 0 },
    });
    expect(usage.endpoints.sort()).toEqual(['/status/404', '/status/503', '/u/ok']);
  });

  it('routes the exact management paths to the management app and proxies everything else', async () => {
    const admin = { authorization: `Bearer ${h.rootToken}` };
    const before = h.backend.received.length;
    expect((await call(h.base, '/consumer-api-key', { headers: admin })).json()).toEqual({
      apiKeys: expect.any(Array),
    });
    expect((await call(h.base, '/consumer-api-key/key_abc?x=1', { headers: admin })).json()).toMatchObject({
      code: 'key_not_found',
    });
    expect(
      (await call(h.base, '/rate-limit/create', { method: 'POST', headers: admin })).json(),
    ).toMatchObject({ code: 'unsupported_media_type' });
    expect((await call(h.base, '/consumer-api-key')).json()).toMatchObject({ code: 'unauthorized' });
    // Not exact: proxied, so a consumer key is required (the root token is none).
    expect((await call(h.base, '/consumer-api-key/', { headers: admin })).json()).toMatchObject({
      code: 'invalid_api_key',
    });
    expect((await call(h.base, '/consumer-api-key/a/b')).json()).toMatchObject({ code: 'missing_api_key' });
    expect((await call(h.base, '/v1/consumer-api-key')).json()).toMatchObject({ code: 'missing_api_key' });
    expect(h.backend.received).toHaveLength(before);
  });
});

describe('proxy: authentication', () => {
  const h = new ProxyHarness();
  let key: { id: string; secret: string };

  beforeAll(async () => {
    await h.start();
    key = await h.createKey();
  }, START_MS);
  afterAll(() => h.stop());

  it('answers 401 missing_api_key without a credential, and forwards nothing', async () => {
    const before = h.backend.received.length;
    const res = await call(h.base, '/anything');
    expect(res.status).toBe(401);
    expect(res.json()).toEqual({ error: expect.any(String), code: 'missing_api_key' });
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(h.backend.received).toHaveLength(before);
  });

  it('answers 401 invalid_api_key for unknown, malformed and non-bearer credentials', async () => {
    const before = h.backend.received.length;
    const unknown = 'tg_' + randomBytes(32).toString('base64url');
    for (const headers of [
      bearer(unknown),
      bearer('nonsense'),
      bearer(''),
      { 'x-api-key': 'short' },
      { authorization: 'Basic Zm9vOmJhcg==' },
    ]) {
      const res = await call(h.base, '/anything', { headers });
      expect(res.status).toBe(401);
      expect(res.json()).toEqual({ error: expect.any(String), code: 'invalid_api_key' });
    }
    expect(h.backend.received).toHaveLength(before);
  });

  /** Runs `check` with every query of the app failing: whatever asks the database is answered 503. */
  async function withDatabaseDown(check: () => Promise<void>): Promise<void> {
    h.databaseDown();
    try {
      await check();
    } finally {
      h.databaseUp();
    }
  }

  it('asks the database once per unknown secret, and never for a malformed one', async () => {
    const unknown = 'tg_' + randomBytes(32).toString('base64url');
    expect((await call(h.base, '/x', { headers: bearer(unknown) })).status).toBe(401);
    await withDatabaseDown(async () => {
      expect((await call(h.base, '/x', { headers: bearer(unknown) })).status).toBe(401);
      expect((await call(h.base, '/x', { headers: bearer('tg_tooshort') })).status).toBe(401);
      // A secret it has not seen does reach the database.
      expect(
        (await call(h.base, '/x', { headers: bearer('tg_' + randomBytes(32).toString('base64url')) })).status,
      ).toBe(503);
    });
  });

  it('answers a known key from memory: many first requests at once, and every later one without the database', async () => {
    const fresh = await h.createKey();
    const first = await Promise.all(
      Array.from({ length: 20 }, () => call(h.base, '/x', { headers: bearer(fresh.secret) })),
    );
    expect(first.map((a) => a.status)).toEqual(Array(20).fill(200));
    await withDatabaseDown(async () => {
      const later = await Promise.all(
        Array.from({ length: 20 }, () => call(h.base, '/x', { headers: bearer(fresh.secret) })),
      );
      expect(later.map((a) => a.status)).toEqual(Array(20).fill(200));
    });
  });

  it('refuses a deleted key at once when the deletion is announced', async () => {
    const doomed = await h.createKey();
    expect((await call(h.base, '/x', { headers: bearer(doomed.secret) })).status).toBe(200);
    await h.keys.delete(doomed.id);
    await h.events.publish({ kind: 'key', keyId: doomed.id });
    const res = await call(h.base, '/x', { headers: bearer(doomed.secret) });
    expect(res.status).toBe(401);
    expect(res.json()).toMatchObject({ code: 'invalid_api_key' });
  });

  it('keeps cached keys working while the database is down, and answers 503 auth_unavailable for others', async () => {
    expect((await call(h.base, '/x', { headers: bearer(key.secret) })).status).toBe(200);
    await withDatabaseDown(async () => {
      expect((await call(h.base, '/x', { headers: bearer(key.secret) })).status).toBe(200);
      const other = 'tg_' + randomBytes(32).toString('base64url');
      const res = await call(h.base, '/x', { headers: bearer(other) });
      expect(res.status).toBe(503);
      expect(res.json()).toMatchObject({ code: 'auth_unavailable' });
    });
  });

  it('observes backend latency and proxy overhead', async () => {
    await call(h.base, '/timed', { headers: bearer(key.secret) });
    expect(await h.metric('tollgate_upstream_duration_seconds_count')).toMatch(/ [1-9]\d*$/);
    expect(await h.metric('tollgate_proxy_overhead_seconds_count')).toMatch(/ [1-9]\d*$/);
  });

  it('counts authentication failures and key-cache results in the metrics', async () => {
    expect(await h.metric('tollgate_auth_failures_total{reason="missing"}')).toMatch(/ [1-9]\d*$/);
    expect(await h.metric('tollgate_auth_failures_total{reason="invalid"}')).toMatch(/ [1-9]\d*$/);
    expect(await h.metric('tollgate_key_cache_requests_total{result="hit"}')).toMatch(/ [1-9]\d*$/);
    expect(await h.metric('tollgate_key_cache_requests_total{result="negative"}')).toMatch(/ [1-9]\d*$/);
    expect(await h.metric('tollgate_proxy_requests_total{outcome="unauthorized"}')).toMatch(/ [1-9]\d*$/);
  });
});

describe('proxy: rate limits', () => {
  const h = new ProxyHarness();

  beforeAll(() => h.start(), START_MS);
  afterAll(() => h.stop());

  it('lets exactly L of N concurrent requests reach the backend; the rest get the exact 429', async () => {
    const limit = 5;
    const n = 40;
    const key = await h.createKey({ limit, period: 'hour' });
    const before = h.backend.received.length;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) => call(h.base, `/limited/${i}`, { headers: bearer(key.secret) })),
    );
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect(ok).toHaveLength(limit);
    expect(limited).toHaveLength(n - limit);
    expect(h.backend.received.length - before).toBe(limit);

    // The clock stands at 10:00:00.250 UTC: the hour window ends at 11:00:00, 3599.75 s away.
    for (const res of limited) {
      expect(res.json()).toEqual({
        error: 'Rate limit exceeded',
        code: 'rate_limit_exceeded',
        limit: 5,
        period: 'hour',
        remaining: 0,
        resetTime: '2026-01-05T11:00:00Z',
        name: 'hour',
        scope: 'key',
        per: 'key',
      });
      expect(Object.keys(res.json() as object)).toEqual([
        'error',
        'code',
        'limit',
        'period',
        'remaining',
        'resetTime',
        'name',
        'scope',
        'per',
      ]);
      expect(res.headers['retry-after']).toBe('3600');
      expect(res.headers['ratelimit-policy']).toBe('"hour";q=5;w=3600');
      expect(res.headers['ratelimit']).toBe('"hour";r=0;t=3600');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
    }
    // Forwarded responses carry the headers too, with what remains after each admission.
    expect(ok.map((a) => a.headers['ratelimit-policy'])).toEqual(Array(limit).fill('"hour";q=5;w=3600'));
    expect(ok.map((a) => a.headers['ratelimit']).sort()).toEqual(
      [0, 1, 2, 3, 4].map((r) => `"hour";r=${r};t=3600`),
    );

    const usage = await h.usage(key.id);
    expect(usage).toMatchObject({ requests: n, successful: limit, failed: n - limit });
    expect(await h.metric('tollgate_rate_limited_total')).toMatch(new RegExp(` ${n - limit}$`));
  });

  it('admits again when the window resets, with Retry-After counting down to it', async () => {
    const key = await h.createKey({ limit: 1, period: 'minute' });
    expect((await call(h.base, '/m', { headers: bearer(key.secret) })).status).toBe(200);
    h.now += 20_000; // 10:00:20.250, the minute ends at 10:01:00
    const refused = await call(h.base, '/m', { headers: bearer(key.secret) });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('40');
    expect(refused.headers['ratelimit']).toBe('"minute";r=0;t=40');
    expect(refused.json()).toMatchObject({ resetTime: '2026-01-05T10:01:00Z', period: 'minute', limit: 1 });
    h.now += 40_000;
    const again = await call(h.base, '/m', { headers: bearer(key.secret) });
    expect(again.status).toBe(200);
    expect(again.headers['ratelimit']).toBe('"minute";r=0;t=60');
  });

  it('adds no RateLimit headers for a key without a plan when no default applies', async () => {
    const key = await h.createKey();
    const res = await call(h.base, '/free', { headers: bearer(key.secret) });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit']).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });

  it('applies a newly bound plan as soon as the change is announced', async () => {
    const key = await h.createKey();
    expect((await call(h.base, '/p', { headers: bearer(key.secret) })).headers['ratelimit']).toBeUndefined();
    await h.plans.insert({
      rateLimitId: 'tiny',
      description: '',
      limits: [ruleOf({ limit: 1, period: 'day' })],
      createdAt: new Date(),
    });
    await h.keys.bindPlan(key.id, 'tiny', new Date());
    await h.events.publish({ kind: 'key', keyId: key.id });
    const first = await call(h.base, '/p', { headers: bearer(key.secret) });
    expect(first.headers['ratelimit-policy']).toBe('"day";q=1;w=86400');
    expect((await call(h.base, '/p', { headers: bearer(key.secret) })).status).toBe(429);
  });
});

describe('proxy: DEFAULT_RATE_LIMIT and limiter failures', () => {
  const h = new ProxyHarness();
  beforeAll(
    () => h.start({ env: { DEFAULT_RATE_LIMIT: '2/second' }, limiter: FAILING_LIMITER, captureLogs: true }),
    START_MS,
  );
  afterAll(() => h.stop());

  it('answers 503 limit_unavailable when the limiter fails, forwards nothing, counts the request as failed, and logs the cause', async () => {
    const key = await h.createKey();
    const before = h.backend.received.length;
    h.logLines.length = 0;
    const res = await call(h.base, '/x', { headers: { ...bearer(key.secret), 'x-request-id': 'down-1' } });
    expect(res.status).toBe(503);
    expect(res.json()).toMatchObject({ code: 'limit_unavailable' });
    expect(h.backend.received).toHaveLength(before);
    expect(await h.usage(key.id)).toMatchObject({ requests: 1, failed: 1 });
    const errors = h.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => (l.level as number) >= 50);
    expect(errors).toEqual([
      expect.objectContaining({
        msg: 'rate limit decision failed',
        reqId: 'down-1',
        keyId: key.id,
        err: expect.objectContaining({ message: 'redis down' }),
      }),
    ]);
    expect(h.logLines.join('\n')).not.toContain(key.secret);
  });
});

describe('proxy: Redis out under REDIS_FAILURE_MODE=closed', () => {
  const h = new ProxyHarness();
  beforeAll(
    () =>
      h.start({ env: { DEFAULT_RATE_LIMIT: '2/second' }, limiter: UNAVAILABLE_LIMITER, captureLogs: true }),
    START_MS,
  );
  afterAll(() => h.stop());

  it('answers 503 limit_unavailable without an error line per request: the failover limiter logs the outage once', async () => {
    const key = await h.createKey();
    h.logLines.length = 0;
    for (let i = 0; i < 3; i++) {
      const res = await call(h.base, '/x', { headers: bearer(key.secret) });
      expect(res.status).toBe(503);
      expect(res.json()).toMatchObject({ code: 'limit_unavailable' });
    }
    expect(await h.usage(key.id)).toMatchObject({ requests: 3, failed: 3 });
    const errors = h.logLines.map((l) => JSON.parse(l) as { level: number }).filter((l) => l.level >= 50);
    expect(errors).toEqual([]);
  });
});

describe('proxy: a client that leaves while it is being admitted', () => {
  let admitting!: () => void;
  const reached = new Promise<void>((resolve) => (admitting = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const slow: RateLimiter = {
    consume: async (): Promise<Decision> => {
      admitting();
      await released;
      const limit = {
        scope: 'key' as const,
        rule: ruleOf({ limit: 100, period: 'second' }),
        remaining: 99,
        resetMs: Date.now() + 1_000,
      };
      return { allowed: true, limit, balance: undefined, states: [limit] };
    },
    settle: () => Promise.reject(new Error('not used')),
    peek: (): Promise<LimitState[]> => Promise.reject(new Error('not used')),
    peekBalances: () => Promise.reject(new Error('not used')),
    syncBalances: () => Promise.reject(new Error('not used')),
    spentBalances: () => [],
    close: () => Promise.resolve(),
  };
  const h = new ProxyHarness();
  beforeAll(
    () => h.start({ env: { DEFAULT_RATE_LIMIT: '100/second' }, limiter: slow, captureLogs: true }),
    START_MS,
  );
  afterAll(() => h.stop());

  it('forwards nothing, counts the request as failed (499) and logs no warning', async () => {
    const key = await h.createKey();
    const before = h.backend.received.length;
    h.logLines.length = 0;
    const req = request(`${h.base}/left`, { headers: { ...bearer(key.secret), 'x-request-id': 'left-1' } });
    req.on('error', () => undefined);
    req.end();
    await reached;
    req.destroy();
    await new Promise((r) => setTimeout(r, 100));
    release();
    // A request sent now is admitted after it: had the one that left gone on, it would be there first.
    const after = await h.createKey();
    expect((await fetch(`${h.base}/after-left`, { headers: bearer(after.secret) })).status).toBe(200);
    expect(h.backend.received.slice(before).map((r) => r.url)).toEqual(['/after-left']);
    expect(await h.usage(key.id)).toMatchObject({ requests: 1, successful: 0, failed: 1 });
    const lines = h.logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'proxied request', reqId: 'left-1', status: 499 }),
    );
  });
});

describe('proxy: DEFAULT_RATE_LIMIT', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start({ env: { DEFAULT_RATE_LIMIT: '2/second' } }), START_MS);
  afterAll(() => h.stop());

  it('limits keys without a plan by the default policy', async () => {
    const key = await h.createKey();
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await call(h.base, '/d', { headers: bearer(key.secret) })).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe('proxy: access log', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start({ captureLogs: true }), START_MS);
  afterAll(() => h.stop());

  it('writes one debug line per request, with the request id and key id and never the secret', async () => {
    const key = await h.createKey();
    h.logLines.length = 0;
    await call(h.base, '/logged?token=x', { headers: { ...bearer(key.secret), 'x-request-id': 'log-1' } });
    await call(h.base, '/logged', {
      headers: { 'x-api-key': 'tg_' + 'z'.repeat(43), 'x-request-id': 'log-2' },
    });
    // Background work (retention pruning at start) may log meanwhile: the access log is what counts.
    const lines = h.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'proxied request');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 20,
        msg: 'proxied request',
        reqId: 'log-1',
        keyId: key.id,
        path: '/logged',
        status: 200,
      }),
      expect.objectContaining({ level: 20, msg: 'proxied request', reqId: 'log-2', status: 401 }),
    ]);
    expect(h.logLines.join('')).not.toContain(key.secret);
  });

  it('treats a client that leaves mid-response as gone (499, failed usage), not as a backend failure', async () => {
    const key = await h.createKey();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    h.backend.hook = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('part of the body;');
      void released.then(() => res.end('rest'));
    };
    const errorsBefore = await h.metric('tollgate_proxy_requests_total{outcome="upstream_error"}');
    h.logLines.length = 0;
    await new Promise<void>((resolve) => {
      const req = request(
        `${h.base}/hooked`,
        { headers: { ...bearer(key.secret), 'x-request-id': 'gone-1' } },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => undefined);
      req.end();
    });
    await new Promise((r) => setTimeout(r, 100));
    release();
    h.backend.hook = undefined;
    const { value: used } = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests > 0,
    );
    expect(used).toMatchObject({ requests: 1, successful: 0, failed: 1 });
    const lines = h.logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'proxied request', reqId: 'gone-1', status: 499 }),
    );
    expect(await h.metric('tollgate_proxy_requests_total{outcome="upstream_error"}')).toBe(errorsBefore);
  });
});

describe('proxy: failed-authentication throttle', () => {
  const h = new ProxyHarness();
  // Bursts of 300 requests: on a loaded machine the last of them reach the backend after the harness's
  // 2 s upstream timeout, which is not what these tests are about.
  beforeAll(() => h.start({ upstreamTimeoutMs: 30_000 }), START_MS);
  afterAll(() => h.stop());

  const guess = () => bearer('tg_' + randomBytes(32).toString('base64url'));

  it('answers 429 too_many_failed_attempts once an address has failed 100 times in a minute, without asking the database', async () => {
    const cached = await h.createKey();
    expect((await call(h.base, '/x', { headers: bearer(cached.secret) })).status).toBe(200);
    // The production throttle (docs/security.md): 100 failures per client address per minute.
    for (let i = 0; i < 100; i++) expect((await call(h.base, '/x', { headers: guess() })).status).toBe(401);

    // With the database down, a guess that reached it would be answered 503.
    h.databaseDown();
    try {
      const throttled = await call(h.base, '/x', { headers: guess() });
      expect(throttled.status).toBe(429);
      expect(throttled.json()).toEqual({ error: expect.any(String), code: 'too_many_failed_attempts' });
      // 10:00:00.250 → the failure window ends at 10:01:00.
      expect(throttled.headers['retry-after']).toBe('60');
      // A key already known keeps working from the same address.
      expect((await call(h.base, '/x', { headers: bearer(cached.secret) })).status).toBe(200);
    } finally {
      h.databaseUp();
    }
    expect(await h.metric('tollgate_proxy_requests_total{outcome="throttled"}')).toMatch(/ 1$/);

    h.now += 60_000;
    expect((await call(h.base, '/x', { headers: guess() })).status).toBe(401);
  });

  it('checks no more guesses than the budget when they all arrive at once', async () => {
    h.now += 60_000;
    const misses = async () =>
      Number(/ (\d+)$/.exec(await h.metric('tollgate_key_cache_requests_total{result="miss"}'))?.[1] ?? 0);
    const before = await misses();
    // Look-ups that take a while, as over a network: the guesses' look-ups overlap.
    h.databaseLatency(20);
    try {
      const statuses = await Promise.all(
        Array.from({ length: 150 }, () => call(h.base, '/x', { headers: guess() }).then((r) => r.status)),
      );
      expect(statuses.filter((s) => s === 401)).toHaveLength(100);
      expect(statuses.filter((s) => s === 429)).toHaveLength(50);
    } finally {
      h.databaseLatency(0);
    }
    expect((await misses()) - before).toBe(100);
  });

  it('admits a burst carrying one key this replica has not seen yet: the requests share one look-up, not the guess budget', async () => {
    h.now += 60_000;
    const fresh = await h.createKey();
    h.databaseLatency(20);
    try {
      const statuses = await Promise.all(
        Array.from({ length: 300 }, () =>
          call(h.base, '/x', { headers: bearer(fresh.secret) }).then((r) => r.status),
        ),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    } finally {
      h.databaseLatency(0);
    }
    // The address has spent nothing: a new guess is still checked.
    expect((await call(h.base, '/x', { headers: guess() })).status).toBe(401);
  });
});

describe('proxy: refused request targets', () => {
  const h = new ProxyHarness();
  let key: { id: string; secret: string };
  beforeAll(async () => {
    await h.start({ upstreamPath: '/base' });
    key = await h.createKey();
  }, START_MS);
  afterAll(() => h.stop());

  const send = (target: string, host = '127.0.0.1') =>
    rawRequest(
      h.port,
      `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key.secret}\r\nConnection: close\r\n\r\n`,
    );

  it.each([
    '/a/../b',
    '/..',
    '/a/%2e%2e/b',
    '/a/%2E%2e/b',
    '/a/..%2fb',
    '/a/..%2Fb',
    '/a/%2e%2e%2fb',
    '/a/.%2e/b',
    '/a/./b',
    '/a/..\\b',
    '/a\\..\\b',
    '/a/..;/b',
    '/a/%252e%252e/b',
    '/x/..%2fconsumer-api-key',
    '/a/b/..?q=1',
  ])('refuses %s with 400 and forwards nothing', async (target) => {
    const before = h.backend.received.length;
    const answer = await send(target);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('"code":"invalid_request_target"');
    expect(h.backend.received).toHaveLength(before);
  });

  it('forwards names that merely contain dots', async () => {
    for (const target of ['/a/b.json', '/a/..b/c', '/.well-known/x', '/a/b..', '/a?next=/../x']) {
      const answer = await send(target);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(h.backend.received.at(-1)!.url).toBe('/base' + target);
    }
  });

  it('refuses an absolute-form target naming another host, and honours one naming this host', async () => {
    const before = h.backend.received.length;
    expect(await send(`http://evil.example/steal`)).toMatch(/^HTTP\/1\.1 400 /);
    expect(await send(`http://evil.example/steal`, 'evil.example:1')).toMatch(/^HTTP\/1\.1 400 /);
    expect(h.backend.received).toHaveLength(before);

    const own = `127.0.0.1:${h.port}`;
    expect(await send(`http://${own}/mine?q=1`, own)).toMatch(/^HTTP\/1\.1 200 /);
    expect(h.backend.received.at(-1)!.url).toBe('/base/mine?q=1');
  });
});

describe('proxy: backend failures', () => {
  it(
    'answers 502 bad_gateway when the backend is unreachable, and counts the request as failed',
    async () => {
      const h = await new ProxyHarness().start({ deadBackend: true });
      try {
        const key = await h.createKey();
        const res = await call(h.base, '/x', { headers: bearer(key.secret) });
        expect(res.status).toBe(502);
        expect(res.json()).toEqual({ error: expect.any(String), code: 'bad_gateway' });
        expect(res.headers['x-request-id']).toBeDefined();
        expect(await h.usage(key.id)).toMatchObject({
          requests: 1,
          successful: 0,
          failed: 1,
          cost: 1,
          statusClasses: { '5xx': 1 },
          outcomes: { backendUnreachable: 1, backendError: 0 },
        });
        expect(await h.metric('tollgate_proxy_requests_total{outcome="upstream_error"}')).toMatch(/ 1$/);
      } finally {
        await h.stop();
      }
    },
    START_MS,
  );

  it(
    'answers 504 gateway_timeout when the backend does not answer within UPSTREAM_TIMEOUT_MS',
    async () => {
      const h = await new ProxyHarness().start({ upstreamTimeoutMs: 300 });
      try {
        const key = await h.createKey();
        const started = Date.now();
        const res = await call(h.base, '/slow', { headers: bearer(key.secret) });
        expect(res.status).toBe(504);
        expect(res.json()).toEqual({ error: expect.any(String), code: 'gateway_timeout' });
        expect(Date.now() - started).toBeLessThan(1_500);
        expect(await h.usage(key.id)).toMatchObject({
          requests: 1,
          failed: 1,
          endpoints: ['/slow'],
          outcomes: { backendUnreachable: 1 },
        });
        // The proxy keeps serving after a timeout.
        expect((await call(h.base, '/fine', { headers: bearer(key.secret) })).status).toBe(200);
      } finally {
        await h.stop();
      }
    },
    START_MS,
  );
});
