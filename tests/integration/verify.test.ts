/**
 * POST /tollgate/verify beyond what it shares with the proxy (tests/integration/verify-as-proxy.test.ts):
 * its scope, what it answers of a key and from where (memory, not the database), how it counts, its
 * throttle per end client, its request checks, its answer where no route takes a path or no limiter
 * answers, and its Redis round trips for a hot key. Every answer is checked against the OpenAPI document.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { FAILING_LIMITER } from '../helpers/failing-limiter.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { sleep, waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { RedisMonitor } from '../helpers/redis-monitor.js';
import { REDIS_URL } from '../helpers/services.js';

afterAll(closeDatabase);

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

interface Reply {
  readonly status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
  readonly body: any;
  readonly headers: Record<string, string>;
  readonly text: string;
}

async function call(h: ProxyHarness, method: string, path: string, body?: unknown, token = h.rootToken) {
  const res = await fetch(h.base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text === '' ? undefined : JSON.parse(text),
    headers: Object.fromEntries(res.headers),
    text,
  };
}

/** A verify call, its answer checked against the document. */
async function verify(h: ProxyHarness, body: unknown, token = h.rootToken): Promise<Reply> {
  const reply = await call(h, 'POST', '/tollgate/verify', body, token);
  expect(checker.problems('post', '/tollgate/verify', reply)).toEqual([]);
  return reply;
}

const created = async (h: ProxyHarness, path: string, body: unknown) => {
  const reply = await call(h, 'POST', path, body);
  if (reply.status !== 201) throw new Error(`${path}: ${reply.status} ${reply.text}`);
  return reply.body;
};
const planned = async (h: ProxyHarness, plan: Record<string, unknown>): Promise<string> => {
  const rateLimitId = 'plan-' + randomBytes(4).toString('hex');
  await created(h, '/rate-limit/create', { rateLimitId, ...plan });
  return rateLimitId;
};
const newKey = async (
  h: ProxyHarness,
  settings: Record<string, unknown> = {},
): Promise<{ id: string; secret: string }> =>
  created(h, '/consumer-api-key/create', { name: 'verified', ...settings });
const unknownSecret = () => 'tg_' + randomBytes(32).toString('base64url');

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;

  beforeAll(async () => {
    h.realTime = true;
    stop = await mode.start(h);
  }, 60_000);

  afterAll(async () => {
    await stop?.();
  });

  it('needs keys:verify, which the root token holds and admin tokens hold only when given it', async () => {
    const key = await newKey(h);
    const token = async (scopes: string[]) =>
      (await created(h, '/tollgate/admin-tokens', { name: 'verifier', scopes })).secret as string;
    const verifier = await token(['keys:verify']);
    expect((await verify(h, { key: key.secret }, verifier)).body).toMatchObject({ valid: true, code: 'ok' });
    // keys:verify reads nothing else.
    expect((await call(h, 'GET', `/consumer-api-key/${key.id}`, undefined, verifier)).status).toBe(403);
    // A token with every key scope but keys:verify (as any token made before it existed) may not verify.
    const refused = await verify(
      h,
      { key: key.secret },
      await token(['keys:read', 'keys:write', 'keys:secrets', 'usage:read']),
    );
    expect([refused.status, refused.body.code]).toEqual([403, 'insufficient_scope']);
    expect(refused.headers['www-authenticate']).toBe(
      'Bearer error="insufficient_scope", scope="keys:verify"',
    );
  });

  it("answers a key's id, consumer, name, externalId and metadata (as written), and a change of them at once", async () => {
    const consumer = await created(h, '/tollgate/consumers', { name: 'acme' });
    const text = JSON.stringify({
      name: 'acme production',
      externalId: 'cus_42',
      consumerId: consumer.consumerId,
      rateLimitId: await planned(h, { limits: [{ limit: 100, period: 'month', algorithm: 'sliding' }] }),
    }).replace(/}$/, ',"metadata":{"tier":"gold","2":{"b":1,"a":[true,null]}}}');
    const key = (await call(h, 'POST', '/consumer-api-key/create', text)).body;
    const first = await verify(h, { key: key.secret });
    expect(first.body).toEqual({
      valid: true,
      code: 'ok',
      consumerApiKeyId: key.id,
      consumerId: consumer.consumerId,
      name: 'acme production',
      externalId: 'cus_42',
      metadata: { tier: 'gold', 2: { b: 1, a: [true, null] } },
      limits: [
        {
          name: 'month',
          limit: 100,
          period: 'month',
          remaining: 99,
          resetTime: expect.stringMatching(/Z$/),
          scope: 'key',
          per: 'key',
          algorithm: 'sliding',
        },
      ],
      cost: 1,
    });
    // Members in the order written: the text, not an object that puts "2" first.
    expect(first.text).toContain('"metadata":{"tier":"gold","2":{"b":1,"a":[true,null]}}');
    const patched = await call(h, 'PATCH', `/consumer-api-key/${key.id}`, {
      name: 'acme staging',
      externalId: null,
      metadata: { tier: 'silver' },
    });
    expect(patched.status).toBe(200);
    expect((await verify(h, { key: key.secret })).body).toMatchObject({
      name: 'acme staging',
      externalId: null,
      metadata: { tier: 'silver' },
      limits: [expect.objectContaining({ remaining: 98 })],
    });
  });

  it('answers a known key from memory: with the database down it still decides, an unknown key gets 503', async () => {
    const key = await newKey(h, { rateLimitId: await planned(h, { limit: 10, period: 'day' }) });
    // A look-up during which a change was announced is not kept (one read back from the record may
    // come at any moment): verified again until an answer comes from memory.
    const hits = async () =>
      Number((await h.metric('tollgate_key_cache_requests_total{result="hit"}')).split(' ')[1] ?? 0);
    expect((await verify(h, { key: key.secret })).body.valid).toBe(true);
    let answer: Reply;
    for (let tries = 1; ; tries++) {
      const before = await hits();
      answer = await verify(h, { key: key.secret });
      if ((await hits()) > before) break;
      expect(tries).toBeLessThan(5);
    }
    expect(answer.body.valid).toBe(true);
    const remaining = answer.body.limits[0].remaining as number;
    h.databaseDown();
    try {
      const known = await verify(h, { key: key.secret, path: '/v1/while-down' });
      expect(known.body).toMatchObject({
        valid: true,
        code: 'ok',
        consumerApiKeyId: key.id,
        name: 'verified',
      });
      expect(known.body.limits[0].remaining).toBe(remaining - 1);
      const unknown = await verify(h, { key: unknownSecret() });
      expect([unknown.status, unknown.body.code]).toEqual([503, 'auth_unavailable']);
    } finally {
      h.databaseUp();
    }
  });

  it('counts each verify once under its path, default (verify), and customer; sets lastUsedAt; audits nothing', async () => {
    const key = await newKey(h, {
      rateLimitId: await planned(h, {
        limit: 50,
        period: 'day',
        costs: [{ match: { pathPrefix: '/v1/reports', methods: ['POST'] }, cost: 4 }],
      }),
    });
    const audited = async () => (await call(h, 'GET', '/tollgate/audit-log?limit=1000')).body.auditLog.length;
    const entries = await audited();
    // A lower-case method is taken in upper case; the plan prices the request, unless `cost` says.
    const priced = await verify(h, {
      key: key.secret,
      path: '/v1/reports/1',
      method: 'post',
      customerId: 'cus-a',
    });
    expect([priced.body.cost, priced.body.limits[0].remaining]).toEqual([4, 46]);
    const given = await verify(h, { key: key.secret, path: '/v1/reports/1', method: 'POST', cost: 7 });
    expect([given.body.cost, given.body.limits[0].remaining]).toEqual([7, 39]);
    expect((await verify(h, { key: key.secret })).body.cost).toBe(1);
    const usage = (
      await waitFor(
        () => h.usage(key.id),
        (u) => u.requests >= 3 && Object.keys(u.customers).length > 0,
      )
    ).value;
    expect(usage).toMatchObject({
      requests: 3,
      successful: 3,
      failed: 0,
      cost: 12,
      customers: { 'cus-a': 1 },
    });
    expect([...usage.endpoints].sort()).toEqual(['(verify)', '/v1/reports/1']);
    expect(await audited()).toBe(entries);
    const { value: detail } = await waitFor(
      async () => (await call(h, 'GET', `/consumer-api-key/${key.id}`)).body,
      (d) => d.lastUsedAt !== null,
    );
    expect(detail.lastUsedAt).toMatch(/Z$/);
    await h.flushed();
    expect(await h.usage(key.id)).toEqual(usage);
  });

  it("throttles wrong keys per clientAddress (as the proxy normalises it), never per the caller's own address", async () => {
    // Without clientAddress: no address throttle, however many wrong keys.
    for (let i = 0; i < 110; i++)
      expect((await verify(h, { key: unknownSecret() })).body.code).toBe('invalid_api_key');
    // The caller's own address (the proxy sees it too) was not counted.
    const proxied = await fetch(h.base + '/v1/items', {
      headers: { authorization: `Bearer ${unknownSecret()}` },
    });
    expect(proxied.status).toBe(401);
    // ::ffff:203.0.113.9 and 203.0.113.9 are one address: 100 wrong keys a minute between them. The
    // throttle counts per minute: the app's clock stands at the start of one while they are sent.
    h.now = (Math.floor(Date.now() / 60_000) + 1) * 60_000 + 10;
    h.realTime = false;
    for (let i = 0; i < 100; i++)
      expect((await verify(h, { key: unknownSecret(), clientAddress: '::ffff:203.0.113.9' })).body.code).toBe(
        'invalid_api_key',
      );
    const throttled = await verify(h, { key: unknownSecret(), clientAddress: '203.0.113.9' });
    expect(throttled.body).toEqual({
      valid: false,
      code: 'too_many_failed_attempts',
      limits: [],
      resetTime: expect.stringMatching(/:00Z$/),
      retryAfterSeconds: expect.any(Number),
    });
    // A key memory knows still works from the throttled address, as through the proxy.
    const key = await newKey(h);
    expect((await verify(h, { key: key.secret })).body.valid).toBe(true);
    expect((await verify(h, { key: key.secret, clientAddress: '203.0.113.9' })).body.valid).toBe(true);
    h.realTime = true;
  });

  it('refuses a body it cannot decide by (400), and answers a path the proxy refuses as the proxy does', async () => {
    const key = await newKey(h);
    const problems = async (body: unknown) => {
      const reply = await verify(h, body);
      expect([reply.status, reply.body.code]).toEqual([400, 'validation_failed']);
      return reply.body.details.map((d: { field: string }) => d.field);
    };
    expect(await problems({})).toEqual(['key']);
    expect(await problems({ key: key.secret, clientAddress: 'localhost' })).toEqual(['clientAddress']);
    expect(await problems({ key: key.secret, path: 'v1/no-slash', method: 'GET /' })).toEqual([
      'path',
      'method',
    ]);
    expect(await problems({ key: key.secret, path: '/v1?query=no', cost: 0, extra: 1 })).toEqual(
      expect.arrayContaining(['path', 'cost', 'extra']),
    );
    const dotted = await verify(h, { key: key.secret, path: '/v1/../admin' });
    expect(dotted.body).toEqual({ valid: false, code: 'invalid_request_target', limits: [] });
    // Nothing is counted of it (nor of the 400s): once a later request is stored, the key has no usage.
    await h.flushed();
    expect((await h.usage(key.id)).requests).toBe(0);
  });

  it('is a management call like every other: the caller, the body, the envelope, no-store, x-request-id, 405', async () => {
    const raw = (init: RequestInit) => fetch(h.base + '/tollgate/verify', { method: 'POST', ...init });
    const json = { 'content-type': 'application/json' };
    const check = async (res: Response, status: number, code: string) => {
      const reply: Reply = {
        status: res.status,
        body: await res.json(),
        headers: Object.fromEntries(res.headers),
        text: '',
      };
      expect([reply.status, reply.body.code]).toEqual([status, code]);
      expect(checker.problems('post', '/tollgate/verify', reply)).toEqual([]);
      expect(reply.headers['cache-control']).toBe('no-store');
      return reply;
    };
    const anonymous = await check(await raw({ headers: json, body: '{}' }), 401, 'unauthorized');
    expect(anonymous.headers['www-authenticate']).toBe('Bearer');
    const wrong = await check(
      await raw({ headers: { ...json, authorization: 'Bearer wrong' }, body: '{}' }),
      401,
      'unauthorized',
    );
    expect(wrong.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    const root = { authorization: `Bearer ${h.rootToken}` };
    await check(
      await raw({ headers: { ...root, 'content-type': 'text/plain' }, body: '{}' }),
      415,
      'unsupported_media_type',
    );
    await check(await raw({ headers: { ...root, ...json }, body: '{"key": ' }), 400, 'invalid_json');
    await check(
      await raw({ headers: { ...root, ...json }, body: JSON.stringify({ key: 'x'.repeat(70_000) }) }),
      413,
      'payload_too_large',
    );
    const ok = await raw({
      headers: { ...root, ...json, 'x-request-id': 'req-verify-1' },
      body: '{"key": ""}',
    });
    expect([ok.status, ok.headers.get('x-request-id'), ok.headers.get('cache-control')]).toEqual([
      200,
      'req-verify-1',
      'no-store',
    ]);
    expect(await ok.text()).toBe('{"valid":false,"code":"invalid_api_key","limits":[]}');
    const get = await fetch(h.base + '/tollgate/verify', { headers: root });
    expect([get.status, get.headers.get('allow'), ((await get.json()) as Reply['body']).code]).toEqual([
      405,
      'POST',
      'method_not_allowed',
    ]);
  });

  it('routes by path, method and host as the proxy: without a host only routes for every host, without a path none', async () => {
    await created(h, '/tollgate/routes', {
      routeId: 'eu-api',
      match: { host: '*.eu.example.com', pathPrefix: '/v2', methods: ['GET'] },
      upstreamUrl: h.config.upstreamUrl!.toString(),
    });
    await sleep(1_100);
    const key = await newKey(h, { allowedRouteIds: ['eu-api'] });
    const code = async (request: Record<string, unknown>) =>
      (await verify(h, { key: key.secret, ...request })).body.code;
    expect(await code({ path: '/v2/x', method: 'GET', host: 'shop.EU.example.com:443' })).toBe('ok');
    expect(await code({ path: '/v2/x', method: 'POST', host: 'shop.eu.example.com' })).toBe(
      'route_not_allowed',
    );
    expect(await code({ path: '/v2/x', method: 'GET' })).toBe('route_not_allowed');
    expect(await code({})).toBe('route_not_allowed');
    await call(h, 'DELETE', '/tollgate/routes/eu-api');
  });

  it('counts verify decisions in the metrics, by code', async () => {
    const before = await h.metric('tollgate_verifications_total{code="key_disabled"}');
    const key = await newKey(h, { enabled: false });
    expect((await verify(h, { key: key.secret })).body.code).toBe('key_disabled');
    const count = (text: string) => Number(/ (\d+)$/.exec(text)?.[1] ?? 0);
    expect(count(await h.metric('tollgate_verifications_total{code="key_disabled"}'))).toBe(
      count(before) + 1,
    );
  });

  if (mode.redis) {
    // A ceiling that a script call per verify (or per few) would break; the bench measures the figure
    // itself at full load (docs/performance.md: npm run bench -- verify).
    it('takes a hot key from the leases: a limiter script call per dozens of verifies, not per verify', async () => {
      const key = await newKey(h, {
        rateLimitId: await planned(h, { limit: 1_000_000_000, period: 'hour' }),
      });
      const body = JSON.stringify({ key: key.secret });
      const headers = { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' };
      /** `calls` verifies of the key, 50 at a time, as a busy server sends them. */
      const verifyMany = async (calls: number) => {
        let next = 0;
        let admitted = 0;
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            while (next < calls) {
              next++;
              const res = await fetch(h.base + '/tollgate/verify', { method: 'POST', headers, body });
              if (((await res.json()) as { valid: boolean }).valid) admitted++;
            }
          }),
        );
        expect(admitted).toBe(calls);
      };
      // Leases follow the key's rate: a key becomes hot by being used.
      await verifyMany(1_000);
      const redis = new Redis(REDIS_URL);
      const monitor = await RedisMonitor.start(REDIS_URL);
      try {
        const calls = 4_000;
        await verifyMany(calls);
        await monitor.caughtUp(redis);
        // The scripts that count this key (other test files share the server): `<prefix>{<keyId>}…` keys.
        const counts = `${h.config.redisKeyPrefix}{${key.id}}`;
        const scripts = monitor.commands.filter(
          (c) => c.source !== 'lua' && c.args[0] === 'evalsha' && c.args.some((a) => a.startsWith(counts)),
        );
        expect(scripts.length).toBeGreaterThan(0);
        expect(scripts.length / calls).toBeLessThanOrEqual(0.1);
      } finally {
        monitor.close();
        redis.disconnect();
      }
    }, 90_000);
  }
});

describe.each(HARNESS_MODES)('$name, on a clock the test holds', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;

  beforeAll(async () => {
    stop = await mode.start(h);
  }, 60_000);

  afterAll(async () => {
    await stop?.();
  });

  it('throttles wrong keys per address however it is spelled: IPv6 canonically, IPv4-mapped as IPv4', async () => {
    // Two addresses, each in two spellings: 100 wrong keys a minute per address, whichever spelling.
    const addresses = [
      ['2001:DB8::9', '2001:db8:0:0:0:0:0:9'],
      ['::FFFF:203.0.113.9', '::ffff:cb00:7109'],
    ];
    for (const spellings of addresses)
      for (let i = 0; i < 100; i++) {
        const clientAddress = spellings[i % 2]!;
        expect((await verify(h, { key: unknownSecret(), clientAddress })).body.code).toBe('invalid_api_key');
      }
    for (const clientAddress of [...addresses.flat(), '2001:db8::9', '203.0.113.9']) {
      const { body } = await verify(h, { key: unknownSecret(), clientAddress });
      expect({ clientAddress, ...body }).toEqual({
        clientAddress,
        valid: false,
        code: 'too_many_failed_attempts',
        limits: [],
        resetTime: '2026-01-05T10:01:00Z',
        retryAfterSeconds: 60,
      });
    }
    // Another address has its own budget.
    expect((await verify(h, { key: unknownSecret(), clientAddress: '2001:db8::a' })).body.code).toBe(
      'invalid_api_key',
    );
  });
});

describe('embedded, where verify cannot decide as it would like', () => {
  it('answers route_not_found for a path no route takes without a catch-all, counted as failed', async () => {
    const h = new ProxyHarness();
    h.realTime = true;
    await h.start({ env: { UPSTREAM_URL: '' } });
    try {
      const key = await newKey(h);
      expect((await verify(h, { key: key.secret, path: '/v1/nowhere' })).body).toMatchObject({
        valid: false,
        code: 'route_not_found',
        consumerApiKeyId: key.id,
      });
      // Without a path it takes no route: decided as the catch-all would be, though there is none.
      expect((await verify(h, { key: key.secret })).body.code).toBe('ok');
      const usage = (
        await waitFor(
          () => h.usage(key.id),
          (u) => u.requests >= 2,
        )
      ).value;
      expect(usage).toMatchObject({
        requests: 2,
        successful: 1,
        failed: 1,
        statusClasses: { '4xx': 1, '2xx': 1 },
      });
    } finally {
      await h.stop();
    }
  });

  it('answers 503 limit_unavailable when the limiter fails, and counts the call as failed as the proxy does', async () => {
    const h = new ProxyHarness();
    h.realTime = true;
    await h.start({ env: { DEFAULT_RATE_LIMIT: '5/second' }, limiter: FAILING_LIMITER });
    try {
      const key = await newKey(h);
      const reply = await verify(h, { key: key.secret });
      expect([reply.status, reply.body.code]).toEqual([503, 'limit_unavailable']);
      const proxied = await fetch(h.base + '/v1/items', {
        headers: { authorization: `Bearer ${key.secret}` },
      });
      expect(proxied.status).toBe(503);
      const usage = (
        await waitFor(
          () => h.usage(key.id),
          (u) => u.requests >= 2,
        )
      ).value;
      expect(usage).toMatchObject({ requests: 2, successful: 0, failed: 2, statusClasses: { '5xx': 2 } });
    } finally {
      await h.stop();
    }
  });
});
