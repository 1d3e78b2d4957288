/**
 * Plans of several limits and sliding windows through the proxy (docs/guides/plans.md): which limit the
 * 429 body, Retry-After and the RateLimit headers name, by value, on an injected clock.
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ruleOf } from '../../src/plans/plan.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: unknown;
}

function call(base: string, secret: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(base + '/v1/things', { headers: { authorization: `Bearer ${secret}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: res.headers['content-type']?.startsWith('application/json') ? JSON.parse(text) : text,
        });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The headers that tell a client about its limits. */
const limitHeaders = (a: Answer) => ({
  status: a.status,
  policy: a.headers['ratelimit-policy'],
  limit: a.headers['ratelimit'],
  retryAfter: a.headers['retry-after'],
});

describe('proxy: a plan with a burst limit and a daily quota', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start(), 120_000);
  afterAll(() => h.stop());

  it('lists every limit, reports the one with the fewest left, and names the refusing one', async () => {
    // Monday 2026-01-05 10:00:00.250 UTC.
    const key = await h.createKey(
      { name: 'burst', limit: 3, period: 'second' },
      { name: 'daily', limit: 5, period: 'day' },
    );
    const policy = '"burst";q=3;w=1, "daily";q=5;w=86400';
    const before = h.backend.received.length;
    const first = [
      await call(h.base, key.secret),
      await call(h.base, key.secret),
      await call(h.base, key.secret),
    ];
    expect(first.map(limitHeaders)).toEqual([
      { status: 200, policy, limit: '"burst";r=2;t=1', retryAfter: undefined },
      { status: 200, policy, limit: '"burst";r=1;t=1', retryAfter: undefined },
      { status: 200, policy, limit: '"burst";r=0;t=1', retryAfter: undefined },
    ]);
    const burst = await call(h.base, key.secret);
    expect(limitHeaders(burst)).toEqual({ status: 429, policy, limit: '"burst";r=0;t=1', retryAfter: '1' });
    expect(burst.body).toEqual({
      error: 'Rate limit exceeded',
      code: 'rate_limit_exceeded',
      limit: 3,
      period: 'second',
      remaining: 0,
      resetTime: '2026-01-05T10:00:01Z',
      name: 'burst',
      scope: 'key',
      per: 'key',
    });

    // The next second: the day has 2 left, fewer than the burst's 3.
    h.now += 1_000;
    expect(limitHeaders(await call(h.base, key.secret))).toEqual({
      status: 200,
      policy,
      limit: '"daily";r=1;t=50399',
      retryAfter: undefined,
    });
    expect(limitHeaders(await call(h.base, key.secret))).toEqual({
      status: 200,
      policy,
      limit: '"daily";r=0;t=50399',
      retryAfter: undefined,
    });
    const daily = await call(h.base, key.secret);
    // 10:00:01.250 to midnight is 50,398.75 s: whole seconds, rounded up.
    expect(limitHeaders(daily)).toEqual({
      status: 429,
      policy,
      limit: '"daily";r=0;t=50399',
      retryAfter: '50399',
    });
    expect(daily.body).toEqual({
      error: 'Rate limit exceeded',
      code: 'rate_limit_exceeded',
      limit: 5,
      period: 'day',
      remaining: 0,
      resetTime: '2026-01-06T00:00:00Z',
      name: 'daily',
      scope: 'key',
      per: 'key',
    });
    expect(h.backend.received.length - before).toBe(5);
    expect(await h.usage(key.id)).toMatchObject({
      requests: 7,
      successful: 5,
      failed: 2,
      cost: 5,
      statusClasses: { '2xx': 5, '4xx': 2 },
      outcomes: { rateLimited: 2 },
    });
  });

  it('names the refusing limit whose window ends last when several are full', async () => {
    h.now = Date.UTC(2026, 0, 5, 11, 30, 0, 0);
    const key = await h.createKey({ limit: 1, period: 'second' }, { limit: 1, period: 'hour' });
    expect((await call(h.base, key.secret)).status).toBe(200);
    const refused = await call(h.base, key.secret);
    expect(limitHeaders(refused)).toEqual({
      status: 429,
      policy: '"second";q=1;w=1, "hour";q=1;w=3600',
      limit: '"hour";r=0;t=1800',
      retryAfter: '1800',
    });
    expect(refused.body).toMatchObject({
      limit: 1,
      period: 'hour',
      resetTime: '2026-01-05T12:00:00Z',
      name: 'hour',
    });
  });
});

describe('proxy: a sliding limit', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start(), 120_000);
  afterAll(() => h.stop());

  it('refuses across a second boundary where a fixed window would admit again, and says when a place frees', async () => {
    h.now = Date.UTC(2026, 0, 5, 10, 0, 0, 950);
    const key = await h.createKey({ limit: 2, period: 'second', algorithm: 'sliding' });
    expect((await call(h.base, key.secret)).status).toBe(200);
    expect((await call(h.base, key.secret)).status).toBe(200);
    h.now += 100; // 10:00:01.050: a new fixed second, but the last second still holds both.
    const refused = await call(h.base, key.secret);
    // Slots of 50 ms: the places of the slot from 10:00:00.950 stop counting 21 slots after it began.
    expect(limitHeaders(refused)).toEqual({
      status: 429,
      policy: '"second";q=2;w=1',
      limit: '"second";r=0;t=1',
      retryAfter: '1',
    });
    expect(refused.body).toMatchObject({ resetTime: '2026-01-05T10:00:02Z', name: 'second' });
    h.now = Date.UTC(2026, 0, 5, 10, 0, 2, 0);
    expect((await call(h.base, key.secret)).status).toBe(200);
  });
});

describe('proxy: a plan changed within a window', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start(), 120_000);
  afterAll(() => h.stop());

  it('keeps what the window spent: a limit lowered below it refuses until the window resets', async () => {
    h.now = Date.UTC(2026, 0, 5, 10, 0, 10, 0);
    const key = await h.createKey({ limit: 10, period: 'minute' });
    for (let i = 0; i < 6; i++) expect((await call(h.base, key.secret)).status).toBe(200);
    const rateLimitId = (await h.keys.get(key.id))!.rateLimitId!;
    await h.plans.update(rateLimitId, { limits: [ruleOf({ limit: 5, period: 'minute' })] }, new Date(h.now));
    await h.events.publish({ kind: 'plan', rateLimitId });
    const refused = await call(h.base, key.secret);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ limit: 5, period: 'minute', resetTime: '2026-01-05T10:01:00Z' });
    h.now = Date.UTC(2026, 0, 5, 10, 1, 0, 0);
    expect(limitHeaders(await call(h.base, key.secret))).toMatchObject({
      status: 200,
      limit: '"minute";r=4;t=60',
    });
  });
});
