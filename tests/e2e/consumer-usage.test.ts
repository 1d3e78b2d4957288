/**
 * A consumer's usage as a client of the management API reads it (docs/guides/consumers.md, docs/guides/usage-and-billing.md), from
 * the built server in both modes: usage over time grouped by endpoint and by customer, as JSON and as
 * CSV; the consumers in the fleet's usage (`topConsumers`); and a key's detail listing the key's own
 * limits and its consumer's, each with its scope.
 */
import { startBackend, type Backend } from './helpers/backend.js';
import { MODES, type Deployment } from './helpers/modes.js';
import { consumerWithKeys, hit, waitFor, type Account } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;

beforeAll(async () => {
  backend = await startBackend();
});

afterAll(async () => {
  await backend?.close();
  expectNoSecretsLogged();
});

interface Bucket {
  readonly start: string;
  readonly requests: number;
  readonly successful: number;
  readonly rateLimited: number;
}
type Series = { endpoint?: string; customerId?: string; buckets: Bucket[] };

const requestsIn = (buckets: readonly Bucket[]) => buckets.reduce((n, b) => n + b.requests, 0);

describe.each(MODES)('$name', (mode) => {
  let deployment: Deployment;
  let tollgate: Tollgate;
  /** Its first key has a plan of its own, of 3 requests a day; the consumer's plan, 1,000 a day. */
  let acme: Account;
  let usagePath: string;

  beforeAll(async () => {
    deployment = await mode.deploy();
    tollgate = await startTollgate({ ...deployment.env, UPSTREAM_URL: backend.url });
    acme = await consumerWithKeys(tollgate, 'acme', { keys: 2, limit: 1_000, keyLimit: 3 });
    const globex = await consumerWithKeys(tollgate, 'globex', { keys: 1 });
    usagePath = `/tollgate/consumers/${acme.consumerId}/usage`;
    const [own, shared] = acme.keys as [Account['keys'][0], Account['keys'][0]];
    // acme: its first key four times (the fourth refused by the key's own plan), its second key three
    // times; two endpoints, two customers of acme's, one request without a customer. globex: once.
    const sent: [string, string, string | undefined, number][] = [
      [own.secret, '/v1/search', 'cus_a', 200],
      [own.secret, '/v1/search', 'cus_a', 200],
      [own.secret, '/v1/orders', 'cus_b', 200],
      [own.secret, '/v1/orders', 'cus_b', 429],
      [shared.secret, '/v1/search', 'cus_b', 200],
      [shared.secret, '/v1/search', undefined, 200],
      [shared.secret, '/v1/orders', 'cus_a', 200],
      [globex.keys[0]!.secret, '/v1/search', 'cus_g', 200],
    ];
    for (const [secret, path, customer, status] of sent)
      expect(
        await hit(tollgate, secret, path, customer === undefined ? {} : { 'x-customer-id': customer }),
      ).toBe(status);
    // Usage shows within 2 s: read on once the fleet has all eight.
    await waitFor(
      () => tollgate.admin('GET', '/tollgate/usage?granularity=day'),
      (res) => requestsIn(res.body.buckets ?? []) === sent.length,
      { timeoutMs: 5_000, everyMs: 100 },
    );
  }, 60_000);

  afterAll(async () => {
    await tollgate?.stop();
    await deployment?.dispose();
  });

  it('groups a consumer’s usage over time by endpoint and by customer, over all its keys', async () => {
    const byEndpoint = await tollgate.admin('GET', `${usagePath}?granularity=day&groupBy=endpoint`);
    expect(byEndpoint.status).toBe(200);
    expect(byEndpoint.body.consumerId).toBe(acme.consumerId);
    expect(requestsIn(byEndpoint.body.buckets)).toBe(7);
    expect(
      (byEndpoint.body.series as Series[]).map((s) => ({
        endpoint: s.endpoint,
        requests: requestsIn(s.buckets),
        rateLimited: s.buckets.reduce((n, b) => n + b.rateLimited, 0),
      })),
    ).toEqual([
      { endpoint: '/v1/search', requests: 4, rateLimited: 0 },
      { endpoint: '/v1/orders', requests: 3, rateLimited: 1 },
    ]);

    const byCustomer = await tollgate.admin('GET', `${usagePath}?granularity=month&groupBy=customer`);
    expect(byCustomer.status).toBe(200);
    // The request without a customer is in the buckets, in no customer's series.
    expect(requestsIn(byCustomer.body.buckets)).toBe(7);
    expect(
      (byCustomer.body.series as Series[])
        .map((s) => [s.customerId, requestsIn(s.buckets)])
        .sort(([a], [b]) => String(a).localeCompare(String(b))),
    ).toEqual([
      ['cus_a', 3],
      ['cus_b', 3],
    ]);

    // Series come at day and month granularity only.
    const hourly = await tollgate.admin('GET', `${usagePath}?granularity=hour&groupBy=customer`);
    expect(hourly.status).toBe(400);
    expect(hourly.body).toMatchObject({
      code: 'validation_failed',
      details: [expect.objectContaining({ field: 'groupBy' })],
    });
  });

  it('answers the same as CSV to a client that asks for it', async () => {
    const csv = async (query: string) => {
      const res = await fetch(`${tollgate.url}${usagePath}?${query}`, {
        headers: { authorization: `Bearer ${tollgate.rootToken}`, accept: 'text/csv' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
      const [header, ...rows] = (await res.text()).trim().split('\n');
      return { columns: header!.split(','), rows: rows.map((row) => row.split(',')) };
    };
    const byCustomer = await csv('granularity=month&groupBy=customer');
    expect(byCustomer.columns.slice(0, 4)).toEqual(['start', 'customerId', 'requests', 'successful']);
    expect(byCustomer.rows.map((row) => [row[1], row[2], row[3]]).sort()).toEqual([
      ['"cus_a"', '3', '3'],
      ['"cus_b"', '3', '2'],
    ]);
    const byDay = await csv('granularity=day');
    expect(byDay.columns.slice(0, 5)).toEqual(['start', 'requests', 'successful', 'failed', 'rateLimited']);
    const json = await tollgate.admin('GET', `${usagePath}?granularity=day`);
    expect(byDay.rows.map((row) => [row[1], row[2], row[3], row[4]])).toEqual(
      (json.body.buckets as (Bucket & { failed: number })[]).map((b) =>
        [b.requests, b.successful, b.failed, b.rateLimited].map(String),
      ),
    );
  });

  it('lists the busiest consumers in the fleet’s usage, with what their keys were refused', async () => {
    const fleet = await tollgate.admin('GET', '/tollgate/usage?granularity=day');
    expect(fleet.status).toBe(200);
    expect(fleet.body.topConsumers).toEqual([
      { consumerId: acme.consumerId, name: 'acme', requests: 7, rateLimited: 1 },
      { consumerId: expect.stringMatching(/^con_/), name: 'globex', requests: 1, rateLimited: 0 },
    ]);
  });

  it("lists a key's own limits and its consumer's in its detail, each with its scope", async () => {
    const detail = await tollgate.admin('GET', `/consumer-api-key/${acme.keys[0]!.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.consumerId).toBe(acme.consumerId);
    // The seed's fields report the limit with the fewest left: the key's own, spent. The consumer's
    // counts what both keys were admitted (3 + 3), not the refusal.
    expect(detail.body.usage.rateLimits).toEqual({
      limit: 3,
      remaining: 0,
      resetTime: expect.any(String),
      limits: [
        {
          name: 'day',
          limit: 3,
          period: 'day',
          remaining: 0,
          resetTime: expect.any(String),
          scope: 'key',
          per: 'key',
        },
        {
          name: 'consumer.day',
          limit: 1_000,
          period: 'day',
          remaining: 1_000 - 6,
          resetTime: expect.any(String),
          scope: 'consumer',
          per: 'key',
        },
      ],
    });
    // A key without a plan of its own lists its consumer's alone.
    const shared = await tollgate.admin('GET', `/consumer-api-key/${acme.keys[1]!.id}`);
    expect(shared.body.usage.rateLimits.limits).toEqual([
      expect.objectContaining({ name: 'consumer.day', remaining: 1_000 - 6, scope: 'consumer' }),
    ]);
  });
});
