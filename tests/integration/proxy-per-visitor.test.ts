/**
 * Limits per visitor through a real Tollgate and a real backend, in both modes (contract section 21):
 * a plan made with `per` through the management API, each client address (IPv6 by its /64) and each
 * customer id with its own count beside the key's, the 429 body and `RateLimit` of the visitor, the
 * key detail's `remaining: null`, and verify deciding as the proxy does; a concurrency limit and a
 * token bucket per visitor (contract section 26), each visitor's places and bucket apart.
 */
import { request as httpRequest, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { windowAt } from '../../src/plans/window.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

function send(port: number, headers: Record<string, string>, path = '/v1/things'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  let plans = 0;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(h.base + path, {
      method,
      headers: {
        authorization: `Bearer ${h.rootToken}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  /** A key bound to a new plan of `limits`, made through the management API. */
  async function keyWith(limits: unknown[]): Promise<{ id: string; secret: string }> {
    const rateLimitId = `visitors-${plans++}`;
    const plan = await call('POST', '/rate-limit/create', { rateLimitId, limits });
    expect(plan.status).toBe(201);
    const key = await call('POST', '/consumer-api-key/create', { name: 'page', rateLimitId });
    expect(key.status).toBe(201);
    return key.body as { id: string; secret: string };
  }

  const from = (secret: string, address: string, more: Record<string, string> = {}, path?: string) =>
    send(h.port, { 'x-api-key': secret, 'x-forwarded-for': address, ...more }, path);

  beforeAll(async () => {
    // A fixed instant of the next hour: Redis keeps a count until its window ends, so not in the past.
    h.now = windowAt('hour', Date.now()).end + 60_000 + 250;
    stop = await mode.start(h, { env: { TRUST_PROXY: '1' } });
  }, 60_000);

  afterAll(async () => {
    await stop?.();
  });

  it('takes `per` in a plan, shows it, and refuses an unknown one', async () => {
    const rateLimitId = `visitors-${plans++}`;
    const created = await call('POST', '/rate-limit/create', {
      rateLimitId,
      limits: [
        { name: 'each', limit: 3, period: 'minute', per: 'clientAddress' },
        { name: 'all', limit: 100, period: 'minute' },
      ],
    });
    expect(created.body.limits).toEqual([
      { name: 'each', limit: 3, period: 'minute', algorithm: 'fixed', per: 'clientAddress' },
      { name: 'all', limit: 100, period: 'minute', algorithm: 'fixed', per: 'key' },
    ]);
    const wrong = await call('POST', '/rate-limit/create', {
      rateLimitId: `visitors-${plans++}`,
      limits: [{ limit: 3, period: 'minute', per: 'visitor' }],
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.code).toBe('validation_failed');
  });

  it('gives each client address its limit, reports its own count, and names `per` in the 429', async () => {
    const key = await keyWith([
      { name: 'each', limit: 2, period: 'minute', per: 'clientAddress' },
      { name: 'all', limit: 5, period: 'minute' },
    ]);
    const received = h.backend.received.length;
    const first = await from(key.secret, '203.0.113.1');
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit']).toBe('"each";r=1;t=60');
    expect((await from(key.secret, '203.0.113.1')).headers['ratelimit']).toBe('"each";r=0;t=60');
    const refused = await from(key.secret, '203.0.113.1');
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ name: 'each', per: 'clientAddress', limit: 2 });
    // Another address has its own count; the key's limit still holds them all together.
    expect((await from(key.secret, '203.0.113.2')).headers['ratelimit']).toBe('"each";r=1;t=60');
    expect((await from(key.secret, '203.0.113.2')).status).toBe(200);
    expect((await from(key.secret, '203.0.113.3')).headers['ratelimit']).toBe('"all";r=0;t=60');
    const keyFull = await from(key.secret, '203.0.113.4');
    expect(keyFull.status).toBe(429);
    expect(JSON.parse(keyFull.body)).toMatchObject({ name: 'all', per: 'key' });
    expect(h.backend.received.length - received).toBe(5);
    // The detail has no one visitor to show: a limit per visitor's remaining is null.
    const detail = await call('GET', `/consumer-api-key/${key.id}`);
    expect(detail.body.usage.rateLimits.limits).toEqual([
      expect.objectContaining({ name: 'each', per: 'clientAddress', remaining: null }),
      expect.objectContaining({ name: 'all', per: 'key', remaining: 0 }),
    ]);
    expect(detail.body.usage.rateLimits).toMatchObject({ limit: 5, remaining: 0 });
  });

  it('counts IPv6 clients by their /64', async () => {
    const key = await keyWith([{ limit: 2, period: 'minute', per: 'clientAddress' }]);
    expect((await from(key.secret, '2001:db8:5:6::1')).status).toBe(200);
    expect((await from(key.secret, '2001:db8:5:6:ffff::2')).status).toBe(200);
    expect((await from(key.secret, '2001:db8:5:6:1:2:3:4')).status).toBe(429);
    expect((await from(key.secret, '2001:db8:5:7::1')).status).toBe(200);
  });

  it('gives each customer id its limit; requests without one share a count', async () => {
    const key = await keyWith([{ limit: 1, period: 'minute', per: 'customer' }]);
    expect((await from(key.secret, '198.51.100.1', { 'x-customer-id': 'alice' })).status).toBe(200);
    expect((await from(key.secret, '198.51.100.2', { 'x-customer-id': 'alice' })).status).toBe(429);
    expect((await from(key.secret, '198.51.100.1', { 'x-customer-id': 'bob' })).status).toBe(200);
    expect((await from(key.secret, '198.51.100.1')).status).toBe(200);
    expect((await from(key.secret, '198.51.100.3')).status).toBe(429);
    const detail = await call('GET', `/consumer-api-key/${key.id}`);
    // Every limit is per visitor: the seed's fields show what a new visitor would have, at once.
    expect(detail.body.usage.rateLimits).toMatchObject({
      limit: 1,
      remaining: 1,
      resetTime: new Date(h.now).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
  });

  it('leaves limits without one count or one window out of the seed fields when others exist', async () => {
    const key = await keyWith([
      { name: 'places', limit: 2, algorithm: 'concurrency' },
      { name: 'each', limit: 1, period: 'minute', per: 'clientAddress' },
      { name: 'hourly', limit: 100, period: 'hour' },
    ]);
    expect((await from(key.secret, '198.51.100.9')).status).toBe(200);
    const { body } = await call('GET', `/consumer-api-key/${key.id}`);
    expect(body.usage.rateLimits).toMatchObject({
      limit: 100,
      remaining: 99,
      resetTime: new Date(windowAt('hour', h.now).end).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    expect(body.usage.rateLimits.limits.map((l: { name: string }) => l.name)).toEqual([
      'places',
      'each',
      'hourly',
    ]);
  });

  it('fills the seed fields of a plan of only concurrency and per-visitor limits with what a new visitor would have', async () => {
    const key = await keyWith([
      { name: 'places', limit: 4, algorithm: 'concurrency' },
      { name: 'bucket', limit: 5, period: 'minute', algorithm: 'tokenBucket', burst: 3, per: 'customer' },
    ]);
    expect((await from(key.secret, '198.51.100.9', { 'x-customer-id': 'alice' })).status).toBe(200);
    const { body } = await call('GET', `/consumer-api-key/${key.id}`);
    // A new customer's bucket holds its burst, 3: fewer than the 4 places free.
    expect(body.usage.rateLimits).toMatchObject({
      limit: 5,
      remaining: 3,
      resetTime: new Date(h.now).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
  });

  it('decides verify as the proxy does: its clientAddress and customerId are the visitor', async () => {
    const key = await keyWith([{ name: 'each', limit: 1, period: 'minute', per: 'clientAddress' }]);
    const verify = (clientAddress: string) =>
      call('POST', '/tollgate/verify', { key: key.secret, clientAddress, customerId: 'c' });
    const first = await verify('192.0.2.1');
    expect(first.body).toMatchObject({
      valid: true,
      limits: [{ name: 'each', per: 'clientAddress', remaining: 0 }],
    });
    expect((await verify('192.0.2.1')).body).toMatchObject({ valid: false, code: 'rate_limit_exceeded' });
    expect((await verify('192.0.2.2')).body).toMatchObject({ valid: true });
    // The proxy counts in the same counts.
    expect((await from(key.secret, '192.0.2.2')).status).toBe(429);
    expect((await from(key.secret, '192.0.2.3')).status).toBe(200);
  });

  it('holds each customer’s requests in flight apart, and gives each address a bucket of its own', async () => {
    const key = await keyWith([
      { name: 'each', limit: 1, algorithm: 'concurrency', per: 'customer' },
      { name: 'burst', limit: 1, period: 'hour', algorithm: 'tokenBucket', burst: 2, per: 'clientAddress' },
    ]);
    const holding: ServerResponse[] = [];
    const inFlight = (n: number) =>
      waitFor(
        async () => holding.length,
        (l) => l === n,
      );
    h.backend.hook = (_req, res) => void holding.push(res);
    try {
      const alice = from(key.secret, '203.0.113.20', { 'x-customer-id': 'alice' }, '/v1/hooked');
      await inFlight(1);
      // Alice's place is taken, from whichever address.
      const refused = await from(key.secret, '203.0.113.21', { 'x-customer-id': 'alice' }, '/v1/hooked');
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(JSON.parse(refused.body)).toEqual({
        error: 'Too many requests of this key in flight',
        code: 'concurrency_limit_exceeded',
        limit: 1,
        name: 'each',
        scope: 'key',
        per: 'customer',
      });
      // Bob has a place of his own, at alice's address, whose bucket he empties.
      const bob = from(key.secret, '203.0.113.20', { 'x-customer-id': 'bob' }, '/v1/hooked');
      await inFlight(2);
      const spent = await from(key.secret, '203.0.113.20', { 'x-customer-id': 'carol' });
      expect(spent.status).toBe(429);
      expect(JSON.parse(spent.body)).toMatchObject({ name: 'burst', per: 'clientAddress', limit: 1 });
      // Alice's request ends: her place is hers again (another address has its bucket full).
      holding.shift()!.end('done');
      expect((await alice).status).toBe(200);
      const again = await waitFor(
        () => from(key.secret, '203.0.113.22', { 'x-customer-id': 'alice' }),
        (a) => a.status === 200,
      );
      expect(again.value.status).toBe(200);
      expect((await from(key.secret, '203.0.113.22', { 'x-customer-id': 'bob' })).status).toBe(429);
      // Verify sees bob's place taken too.
      const verified = await call('POST', '/tollgate/verify', {
        key: key.secret,
        clientAddress: '203.0.113.23',
        customerId: 'bob',
      });
      expect(verified.body).toMatchObject({ valid: false, code: 'concurrency_limit_exceeded' });
      holding.shift()!.end('done');
      expect((await bob).status).toBe(200);
    } finally {
      h.backend.hook = undefined;
      for (const res of holding.splice(0)) res.end('done');
    }
  });
});
