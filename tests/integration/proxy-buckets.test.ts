/**
 * Token buckets and concurrency limits through the proxy (docs/guides/plans.md), embedded mode, on an
 * injected clock: the RateLimit headers and 429s a client sees, places held by requests the backend
 * holds open, given back when the response ends, when the client leaves, when the backend times out
 * and when a WebSocket closes, and the refusals in usage.
 */
import { request, type ClientRequest, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { waitFor } from '../helpers/poll.js';

afterAll(closeDatabase);

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A request through Tollgate, and the request itself (to leave before the answer). */
function call(
  base: string,
  secret: string,
  path = '/v1/things',
): { answer: Promise<Answer>; req: ClientRequest } {
  let req!: ClientRequest;
  const answer = new Promise<Answer>((resolve, reject) => {
    req = request(base + path, { headers: { authorization: `Bearer ${secret}` } }, (res) => {
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
  return { answer, req };
}

describe('proxy: a token bucket', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start(), 120_000);
  afterAll(() => h.stop());

  it('tells the units left and when one more comes, and a 429 when the refused cost will be there', async () => {
    const key = await h.createKey({ limit: 2, period: 'second', algorithm: 'tokenBucket', burst: 3 });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await call(h.base, key.secret).answer);
    expect(answers.map((a) => [a.status, a.headers['ratelimit']])).toEqual([
      [200, '"second";r=2;t=0'],
      [200, '"second";r=1;t=0'],
      [200, '"second";r=0;t=1'],
      [429, '"second";r=0;t=1'],
    ]);
    expect(answers[0]!.headers['ratelimit-policy']).toBe('"second";q=2;w=1');
    // 10:00:00.250 with an empty bucket refilling a unit every 500 ms: one at .750, in whole seconds 10:00:01.
    expect(answers[3]!.headers['retry-after']).toBe('1');
    expect(answers[3]!.body).toEqual({
      error: 'Rate limit exceeded',
      code: 'rate_limit_exceeded',
      limit: 2,
      period: 'second',
      remaining: 0,
      resetTime: '2026-01-05T10:00:01Z',
      name: 'second',
      scope: 'key',
      per: 'key',
    });
    h.now += 500;
    expect((await call(h.base, key.secret).answer).status).toBe(200);
  });
});

describe('proxy: a concurrency limit', () => {
  const h = new ProxyHarness();
  /** Requests the backend holds open, by their answer. */
  const holding: ServerResponse[] = [];
  beforeAll(async () => {
    await h.start({ upstreamTimeoutMs: 1_500 });
    h.backend.hook = (_req, res) => void holding.push(res);
  }, 120_000);
  afterAll(() => h.stop());
  const inFlight = (n: number) =>
    waitFor(
      async () => holding.length,
      (l) => l === n,
    );

  it('admits the limit in flight, refuses the next 429 concurrency_limit_exceeded, and frees a place as each ends', async () => {
    const key = await h.createKey({ limit: 2, algorithm: 'concurrency' }, { limit: 100, period: 'minute' });
    const first = call(h.base, key.secret, '/hooked');
    const second = call(h.base, key.secret, '/hooked');
    await inFlight(2);
    const refused = await call(h.base, key.secret, '/hooked').answer;
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['ratelimit-policy']).toBe('"concurrency";q=2, "minute";q=100;w=60');
    expect(refused.body).toEqual({
      error: 'Too many requests of this key in flight',
      code: 'concurrency_limit_exceeded',
      limit: 2,
      name: 'concurrency',
      scope: 'key',
      per: 'key',
    });
    expect(holding).toHaveLength(2);
    // The response ends: its place is free for the next request.
    holding.shift()!.end('done');
    expect((await first.answer).status).toBe(200);
    const third = call(h.base, key.secret, '/hooked');
    await inFlight(2);
    // The client leaves: its place is free.
    second.req.destroy();
    await expect(second.answer).rejects.toThrow();
    await waitFor(
      async () => (await h.manage(`/consumer-api-key/${key.id}`).then((r) => r.json())) as KeyDetail,
      (d) => d.usage.rateLimits.limits[0]!.remaining === 1,
    );
    const detail = (await (await h.manage(`/consumer-api-key/${key.id}`)).json()) as KeyDetail;
    expect(detail.usage.rateLimits.limits[0]).toEqual({
      name: 'concurrency',
      limit: 2,
      period: null,
      remaining: 1,
      resetTime: null,
      scope: 'key',
      per: 'key',
    });
    const fourth = call(h.base, key.secret, '/hooked');
    await inFlight(3);
    expect((await call(h.base, key.secret, '/hooked').answer).status).toBe(429);
    // The backend takes longer than UPSTREAM_TIMEOUT_MS: 504, and the places are back.
    expect((await third.answer).status).toBe(504);
    expect((await fourth.answer).status).toBe(504);
    for (const res of holding.splice(0)) res.destroy();
    const again = [call(h.base, key.secret, '/hooked'), call(h.base, key.secret, '/hooked')];
    await inFlight(2);
    for (const res of holding.splice(0)) res.end('done');
    expect((await Promise.all(again.map((c) => c.answer))).map((a) => a.status)).toEqual([200, 200]);
    await waitFor(
      () => h.usage(key.id),
      (u) => u.outcomes['concurrencyLimited'] === 2,
    );
    expect((await h.usage(key.id)).outcomes['concurrencyLimited']).toBe(2);
    // The failure log names the refusing limit, without a period.
    const { value: failures } = await waitFor(
      async () =>
        (await (
          await h.manage(`/consumer-api-key/${key.id}/failures?code=concurrency_limit_exceeded`)
        ).json()) as { failures: { status: number; limit: unknown }[] },
      (page) => page.failures.length === 2,
    );
    expect(failures.failures.map((f) => [f.status, f.limit])).toEqual(
      Array(2).fill([429, { name: 'concurrency', period: null, scope: 'key', limit: 2, per: 'key' }]),
    );
  });

  it('holds a place while a WebSocket is open', async () => {
    const key = await h.createKey({ limit: 1, algorithm: 'concurrency' });
    const url = h.base.replace('http', 'ws') + '/v1/socket';
    const headers = { authorization: `Bearer ${key.secret}` };
    const ws = new WebSocket(url, { headers });
    await new Promise((resolve) => ws.once('open', resolve));
    expect((await call(h.base, key.secret).answer).status).toBe(429);
    ws.close();
    await waitFor(
      async () => (await call(h.base, key.secret).answer).status,
      (status) => status === 200,
    );
  });
});

interface KeyDetail {
  usage: { rateLimits: { limits: ({ remaining: number } & Record<string, unknown>)[] } };
}
