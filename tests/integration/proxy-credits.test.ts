/**
 * Prepaid credits through the proxy (docs/guides/credits.md), built as production builds it, with the
 * in-process counters of a single node and with Redis: a balance pays each admitted request's cost
 * (a plan's `costs` by path), 429 credits_exhausted with its body and Retry-After once it holds less
 * (not forwarded, not charged, counted as failed), refills, a consumer's balance shared by its keys and
 * a key's own charged with it, top-ups in force for the next request, and what was spent saved to the
 * database, so that a restart does not give it back.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../helpers/poll.js';
import { HARNESS_LIMITERS } from '../helpers/harness-limiters.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

function send(port: number, path: string, secret: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { 'x-api-key': secret } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The answers to `paths`, one after the other. */
async function sendEach(port: number, secret: string, paths: readonly string[]): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (const path of paths) answers.push(await send(port, path, secret));
  return answers;
}

const statuses = (answers: readonly Answer[]) => answers.map((a) => a.status);

/** The harness's day, 2026-01-05 (a Monday), at 10:00:00.250 UTC. */
const JAN_5 = Date.UTC(2026, 0, 5, 10, 0, 0, 250);
/** A search costs 5, a lookup 1 (by path prefix), anything else 1; the limit is there only because a plan needs one. */
const PRICED_PLAN = {
  limits: [{ limit: 1_000_000, period: 'month' }],
  costs: [
    { match: { pathPrefix: '/v1/search' }, cost: 5 },
    { match: { pathPrefix: '/v1/lookup' }, cost: 1 },
  ],
};

/** A harness of `limiter`'s mode, started. */
async function started(limiter: string): Promise<ProxyHarness> {
  const h = new ProxyHarness();
  return h.start(await HARNESS_LIMITERS[limiter]!(h));
}

describe.each(Object.keys(HARNESS_LIMITERS))('credits through the proxy, %s', (limiter) => {
  let h: ProxyHarness;

  beforeAll(async () => {
    h = await started(limiter);
  }, 60_000);
  afterAll(() => h.stop());

  const api: ProxyHarness['admin'] = (method, path, body) => h.admin(method, path, body);
  async function created(path: string, body: unknown) {
    const res = await api('POST', path, body);
    expect(res.status).toBe(201);
    return res.body;
  }
  const pricedPlan = async () =>
    (
      await created('/rate-limit/create', {
        rateLimitId: `priced-${randomBytes(4).toString('hex')}`,
        ...PRICED_PLAN,
      })
    ).rateLimitId as string;
  const keyOf = (body: Record<string, unknown>): Promise<{ id: string; secret: string }> =>
    created('/consumer-api-key/create', { name: 'spender', ...body });
  const forwardedFor = (keyId: string) =>
    h.backend.received.filter((r) => r.headers['x-consumer-api-key-id'] === keyId).length;
  const remainingOf = async (path: string) => (await api('GET', path)).body.credits?.remaining as number;

  it('charges each request its cost; 429 credits_exhausted with the body and Retry-After to the refill once the balance holds less, neither forwarded nor charged; the refill sets it back', async () => {
    h.now = JAN_5;
    const key = await keyOf({
      rateLimitId: await pricedPlan(),
      credits: { remaining: 13, refill: { amount: 13, interval: 'month', dayOfMonth: 15 } },
    });
    const admitted = await sendEach(h.port, key.secret, [
      '/v1/lookup/1',
      '/v1/lookup/2',
      '/v1/search?q=a',
      '/v1/search?q=b',
    ]);
    expect(statuses(admitted)).toEqual([200, 200, 200, 200]);
    expect(await remainingOf(`/consumer-api-key/${key.id}`)).toBe(1);

    // 1 left: a search (5) is refused, a lookup (1) goes through, then a lookup is refused.
    const [search, lookup, last] = await sendEach(h.port, key.secret, [
      '/v1/search?q=c',
      '/v1/lookup/3',
      '/v1/lookup/4',
    ]);
    expect(search!.status).toBe(429);
    expect(JSON.parse(search!.body)).toEqual({
      error: 'The credit balance does not hold the cost of this request',
      code: 'credits_exhausted',
      remaining: 1,
      cost: 5,
      scope: 'key',
      resetTime: '2026-01-15T00:00:00Z',
    });
    // Retry-After: whole seconds until the refill on the 15th.
    expect(search!.headers['retry-after']).toBe(String(Math.ceil((Date.UTC(2026, 0, 15) - JAN_5) / 1000)));
    expect(lookup!.status).toBe(200);
    expect(last!.status).toBe(429);
    expect(JSON.parse(last!.body)).toMatchObject({ remaining: 0, cost: 1, scope: 'key' });
    expect(forwardedFor(key.id)).toBe(5);
    expect(await remainingOf(`/consumer-api-key/${key.id}`)).toBe(0);

    const usage = await h.usage(key.id);
    expect(usage).toMatchObject({ requests: 7, successful: 5, failed: 2, cost: 13 });
    expect(usage.outcomes.creditsExhausted).toBe(2);
    expect(usage.statusClasses['4xx']).toBe(2);

    // The refill, at 00:00 UTC on the 15th: 13 again, not 13 more.
    h.now = Date.UTC(2026, 0, 15, 0, 0, 0, 100);
    expect(await remainingOf(`/consumer-api-key/${key.id}`)).toBe(13);
    expect(statuses(await sendEach(h.port, key.secret, ['/v1/search', '/v1/search']))).toEqual([200, 200]);
    expect(await remainingOf(`/consumer-api-key/${key.id}`)).toBe(3);
  });

  it('answers a balance without a refill with resetTime null and no Retry-After', async () => {
    h.now = JAN_5;
    const key = await keyOf({ credits: { remaining: 1 } });
    expect(statuses(await sendEach(h.port, key.secret, ['/a', '/b']))).toEqual([200, 429]);
    const refused = await send(h.port, '/c', key.secret);
    expect(JSON.parse(refused.body)).toEqual({
      error: 'The credit balance does not hold the cost of this request',
      code: 'credits_exhausted',
      remaining: 0,
      cost: 1,
      scope: 'key',
      resetTime: null,
    });
    expect(refused.headers['retry-after']).toBeUndefined();
    expect(forwardedFor(key.id)).toBe(1);
  });

  it("spends a consumer's balance from all its keys; a key with a balance of its own spends both, and the shorter one refuses with its scope", async () => {
    h.now = JAN_5;
    const consumer = await created('/tollgate/consumers', { name: 'acme', credits: { remaining: 10 } });
    const shared = await keyOf({ consumerId: consumer.consumerId });
    const own = await keyOf({ consumerId: consumer.consumerId, credits: { remaining: 3 } });
    const consumerPath = `/tollgate/consumers/${consumer.consumerId}`;

    expect(statuses(await sendEach(h.port, shared.secret, ['/1', '/2', '/3', '/4']))).toEqual([
      200, 200, 200, 200,
    ]);
    expect(await remainingOf(consumerPath)).toBe(6);
    // Both balances pay for each request of the key that holds its own.
    expect(statuses(await sendEach(h.port, own.secret, ['/1', '/2', '/3']))).toEqual([200, 200, 200]);
    expect(await remainingOf(`/consumer-api-key/${own.id}`)).toBe(0);
    expect(await remainingOf(consumerPath)).toBe(3);
    const keyShort = await send(h.port, '/4', own.secret);
    expect(JSON.parse(keyShort.body)).toMatchObject({
      code: 'credits_exhausted',
      scope: 'key',
      remaining: 0,
    });
    expect(await remainingOf(consumerPath)).toBe(3);

    expect(statuses(await sendEach(h.port, shared.secret, ['/5', '/6', '/7', '/8']))).toEqual([
      200, 200, 200, 429,
    ]);
    const consumerShort = await send(h.port, '/9', shared.secret);
    expect(JSON.parse(consumerShort.body)).toMatchObject({
      code: 'credits_exhausted',
      scope: 'consumer',
      remaining: 0,
      resetTime: null,
    });
    expect((await api('GET', `/consumer-api-key/${shared.id}`)).body.credits).toBeNull();
    expect(forwardedFor(shared.id) + forwardedFor(own.id)).toBe(10);

    // A top-up is in force for the very next request, on the key's consumer as on any holder.
    const topUp = await api('POST', '/tollgate/credits', { consumerId: consumer.consumerId, add: 2 });
    expect(topUp).toEqual({ status: 200, body: { consumerId: consumer.consumerId, remaining: 2 } });
    expect(statuses(await sendEach(h.port, shared.secret, ['/10', '/11', '/12']))).toEqual([200, 200, 429]);
    // The key's own balance is still short, whatever its consumer holds now.
    expect((await send(h.port, '/13', own.secret)).status).toBe(429);
  });

  it('keeps what was spent in the database about once a second, and a restart on it does not give it back', async () => {
    h.now = JAN_5;
    const key = await keyOf({ credits: { remaining: 10 } });
    expect(statuses(await sendEach(h.port, key.secret, Array(7).fill('/spend')))).toEqual(Array(7).fill(200));
    const saved = await waitFor(
      async () => (await h.keys.get(key.id))!.balance!.floor,
      (floor) => floor === 7,
      { timeoutMs: 3_000 },
    );
    expect(saved.value).toBe(7);
    expect(saved.ms).toBeLessThan(2_000);
    expect(statuses(await sendEach(h.port, key.secret, ['/spend']))).toEqual([200]);

    // Shut down as SIGTERM does (the last spend is saved then), and start again on the same database;
    // with Redis, on a prefix of its own, as when Redis lost everything and no replica is left that saw it.
    await h.stop();
    h = await started(limiter);
    h.now = JAN_5;
    const after = await sendEach(h.port, key.secret, ['/1', '/2', '/3']);
    expect(statuses(after)).toEqual([200, 200, 429]);
    expect(JSON.parse(after[2]!.body)).toMatchObject({ code: 'credits_exhausted', remaining: 0 });
  });
});
