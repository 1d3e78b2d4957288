/**
 * Usage over time (docs/guides/usage-and-billing.md), on the embedded SQLite store and a real Postgres: buckets written with
 * each batch, exactly once, adding up to the totals; the API's zero-filled, aligned buckets, defaults,
 * groupBy (series of the buckets' shape, filed under the day each request happened, capped per day
 * and month), CSV (safe to open in a spreadsheet), range errors and pending usage; the fleet view with
 * its busiest keys; retention.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { migrate } from '../../src/store/migrate.js';
import { ADVISORY_PRUNE_LOCK, UsageHistoryRepository } from '../../src/usage/history-repository.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { pruneUsage, retainedSince } from '../../src/usage/retention.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { emptyBucket, emptyKeyUsage, minuteOf, type UsageBatch } from '../../src/usage/usage.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';
import { refused as refusal, requestFacts } from '../helpers/request-facts.js';
import pg from 'pg';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
/** Sunday 2026-11-22 10:20:30 UTC. */
const NOW = Date.UTC(2026, 10, 22, 10, 20, 30);
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const logger = createLogger('silent');

/** What the client got: 200, a limiter's 429 (`limited`), or Tollgate's 502 (`ok: false`). */
const answer = ({ ok = true, limited = false }: { ok?: boolean; limited?: boolean }) =>
  limited
    ? refusal('rateLimited')
    : ok
      ? { status: 200 }
      : ({ status: 502, outcome: 'backendUnreachable' } as const);
/** A bucket with no requests, as the API answers it. */
const ZERO = {
  requests: 0,
  successful: 0,
  failed: 0,
  rateLimited: 0,
  averageResponseTimeMs: 0,
  cost: 0,
  unsettled: 0,
  statusClasses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 },
  outcomes: {
    rateLimited: 0,
    creditsExhausted: 0,
    concurrencyLimited: 0,
    disabled: 0,
    expired: 0,
    routeNotAllowed: 0,
    originNotAllowed: 0,
    addressNotAllowed: 0,
    backendError: 0,
    backendUnreachable: 0,
  },
  latencyMs: { p50: null, p95: null, p99: null },
};
/** A number within 5 % of `exact`: a percentile from the latency histogram. */
const near = (exact: number) => ({
  asymmetricMatch: (n: number) => Math.abs(n - exact) <= 0.05 * exact,
  toString: () => `within 5 % of ${exact}`,
});

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('usage over time on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let recorder: UsageRecorder;
  let repository: UsageRepository;
  let now = NOW;

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    repository = new UsageRepository(storage.handle.db);
    recorder = new UsageRecorder(new DatabaseUsageSink(repository), logger, new Metrics());
    app = createManagementApp(
      managementDeps(storage.handle.db, {
        usage: new UsageReader(repository, [recorder]),
        rootToken: ROOT_TOKEN,
        logger,
        clock: () => now,
      }),
    );
  }, 60_000);

  afterAll(() => storage.dispose());

  const get = (path: string, accept = 'application/json') =>
    request(app).get(path).set(AUTH).set('Accept', accept);
  async function key(name = 'k'): Promise<string> {
    const res = await request(app).post('/consumer-api-key/create').set(AUTH).send({ name });
    return res.body.id;
  }
  /** Records requests of a key at given instants, then writes them as one batch. */
  async function requests(
    keyId: string,
    at: number[],
    options: { ok?: boolean; limited?: boolean; endpoint?: string; customer?: string; ms?: number } = {},
  ) {
    for (const t of at)
      recorder.record(
        requestFacts(keyId, {
          endpoint: options.endpoint ?? '/v1/a',
          customerId: options.customer,
          ...answer(options),
          durationMs: options.ms ?? 10,
          atMs: t,
        }),
      );
    await recorder.flush();
  }
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z';
  const sum = (buckets: { requests: number }[]) => buckets.reduce((n, b) => n + b.requests, 0);

  it('answers every minute of the last 3 hours zero-filled, and the buckets of each granularity add up to the totals', async () => {
    now = NOW;
    const id = await key();
    await requests(id, [
      NOW - 2 * HOUR - 5 * MIN,
      NOW - 2 * HOUR - 5 * MIN + 1,
      NOW - 30 * MIN,
      NOW - 10_000,
    ]);
    await requests(id, [NOW - 20 * MIN], { ok: false, limited: true, ms: 2 });
    await requests(id, [NOW - 25 * HOUR], { ok: false, ms: 40 });
    const res = await get(`/consumer-api-key/${id}/usage?from=${iso(NOW - 3 * HOUR)}&to=${iso(NOW)}`);
    expect(checker.problems('get', '/consumer-api-key/{consumerApiKeyId}/usage', res)).toEqual([]);
    expect(res.body).toMatchObject({
      consumerApiKeyId: id,
      granularity: 'minute',
      from: '2026-11-22T07:20:00Z',
      to: '2026-11-22T10:21:00Z',
    });
    expect(res.body.buckets).toHaveLength(181);
    expect(res.body.buckets[0]).toEqual({ start: '2026-11-22T07:20:00Z', ...ZERO });
    const at = (start: string) => res.body.buckets.find((b: { start: string }) => b.start === start);
    expect(at('2026-11-22T08:15:00Z')).toMatchObject({
      requests: 2,
      successful: 2,
      failed: 0,
      averageResponseTimeMs: 10,
    });
    expect(at('2026-11-22T10:00:00Z')).toMatchObject({
      requests: 1,
      successful: 0,
      failed: 1,
      rateLimited: 1,
      averageResponseTimeMs: 2,
    });
    expect(sum(res.body.buckets)).toBe(5);
    for (let i = 1; i < res.body.buckets.length; i++)
      expect(Date.parse(res.body.buckets[i].start) - Date.parse(res.body.buckets[i - 1].start)).toBe(MIN);

    const total = (await get(`/consumer-api-key/${id}`)).body.usage.totalRequests;
    expect(total).toBe(6);
    for (const [granularity, from] of [
      ['hour', NOW - 3 * DAY],
      ['day', NOW - 30 * DAY],
      ['month', NOW - 300 * DAY],
    ] as const) {
      const whole = await get(
        `/consumer-api-key/${id}/usage?granularity=${granularity}&from=${iso(from)}&to=${iso(NOW + MIN)}`,
      );
      expect(whole.status).toBe(200);
      expect(sum(whole.body.buckets)).toBe(total);
    }
    // Each batch was applied once: writing nothing more changes nothing.
    await recorder.flush();
    expect(
      sum(
        (await get(`/consumer-api-key/${id}/usage?granularity=day&from=${iso(NOW - 3 * DAY)}&to=${iso(NOW)}`))
          .body.buckets,
      ),
    ).toBe(6);
  });

  it('picks the granularity from the range: minutes up to 3 h, hours up to 4 days, days beyond; the last 24 h by default', async () => {
    const id = await key();
    const granularity = async (query: string) => (await get(`/consumer-api-key/${id}/usage?${query}`)).body;
    expect(await granularity('')).toMatchObject({
      granularity: 'hour',
      from: '2026-11-21T10:00:00Z',
      to: '2026-11-22T11:00:00Z',
    });
    expect((await granularity('')).buckets).toHaveLength(25);
    expect((await granularity(`from=${iso(NOW - 3 * HOUR)}&to=${iso(NOW)}`)).granularity).toBe('minute');
    expect((await granularity(`from=${iso(NOW - 3 * HOUR - 1000)}&to=${iso(NOW)}`)).granularity).toBe('hour');
    expect((await granularity(`from=${iso(NOW - 4 * DAY)}&to=${iso(NOW)}`)).granularity).toBe('hour');
    expect((await granularity(`from=${iso(NOW - 4 * DAY - 1000)}&to=${iso(NOW)}`)).granularity).toBe('day');
    const months = await granularity(`granularity=month&from=2026-01-15T00:00:00Z&to=2026-11-22T00:00:00Z`);
    expect(months.buckets.map((b: { start: string }) => b.start.slice(0, 10))).toEqual(
      ['01', '02', '03', '04', '05', '06', '07', '08', '09', '10', '11'].map((m) => `2026-${m}-01`),
    );
  });

  it('shows usage not yet written within the current bucket', async () => {
    const id = await key();
    recorder.record(requestFacts(id, { endpoint: '/v1/live', durationMs: 5, atMs: NOW - 1_000 }));
    const res = await get(`/consumer-api-key/${id}/usage?from=${iso(NOW - 10 * MIN)}&to=${iso(NOW)}`);
    expect(res.body.buckets.at(-1)).toMatchObject({ start: '2026-11-22T10:20:00Z', requests: 1 });
    await recorder.flush();
    const after = await get(`/consumer-api-key/${id}/usage?from=${iso(NOW - 10 * MIN)}&to=${iso(NOW)}`);
    expect(after.body.buckets.at(-1)).toMatchObject({ requests: 1 });
  });

  it('groups by endpoint and by customer by day, most requests first; refuses groupBy below a day', async () => {
    const id = await key();
    await requests(id, [NOW - DAY - HOUR, NOW - DAY - HOUR], { endpoint: '/v1/b', customer: 'acme' });
    await requests(id, [NOW - MIN, NOW - MIN, NOW - MIN], { endpoint: '/v1/a', customer: 'globex' });
    const byEndpoint = await get(
      `/consumer-api-key/${id}/usage?granularity=day&groupBy=endpoint&from=${iso(NOW - 2 * DAY)}&to=${iso(NOW)}`,
    );
    expect(checker.problems('get', '/consumer-api-key/{consumerApiKeyId}/usage', byEndpoint)).toEqual([]);
    expect(
      byEndpoint.body.series.map((s: { endpoint: string; buckets: { requests: number }[] }) => [
        s.endpoint,
        s.buckets.map((b) => b.requests),
      ]),
    ).toEqual([
      ['/v1/a', [0, 0, 3]],
      ['/v1/b', [0, 2, 0]],
    ]);
    const byCustomer = await get(
      `/consumer-api-key/${id}/usage?granularity=day&groupBy=customer&from=${iso(NOW - 2 * DAY)}&to=${iso(NOW)}`,
    );
    expect(byCustomer.body.series.map((s: { customerId: string }) => s.customerId)).toEqual([
      'globex',
      'acme',
    ]);
    const refused = await get(`/consumer-api-key/${id}/usage?granularity=hour&groupBy=endpoint`);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'validation_failed', details: [{ field: 'groupBy' }] });
  });

  it('answers the same as CSV', async () => {
    const id = await key();
    await requests(id, [NOW - 2 * MIN], { endpoint: '/v1/"quoted",path', ms: 3 });
    const query = `/consumer-api-key/${id}/usage?from=${iso(NOW - 3 * MIN)}&to=${iso(NOW)}`;
    const json = (await get(query)).body;
    const csv = await get(query, 'text/csv');
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    const columns =
      'requests,successful,failed,rateLimited,averageResponseTimeMs,cost,status2xx,status3xx,status4xx,status5xx,creditsExhausted,concurrencyLimited,disabled,expired,routeNotAllowed,originNotAllowed,addressNotAllowed,backendError,backendUnreachable,latencyP50Ms,latencyP95Ms,latencyP99Ms';
    expect(lines[0]).toBe(`start,${columns}`);
    type Bucket = typeof ZERO & {
      start: string;
      statusClasses: Record<string, number>;
      latencyMs: Record<string, number | null>;
    };
    const flat = (b: Bucket) => [
      b.start,
      b.requests,
      b.successful,
      b.failed,
      b.rateLimited,
      b.averageResponseTimeMs,
      b.cost,
      ...Object.values(b.statusClasses),
      ...Object.values(b.outcomes).slice(1),
      ...Object.values(b.latencyMs).map((p) => p ?? ''),
    ];
    expect(lines.slice(1)).toEqual(json.buckets.map((b: Bucket) => flat(b).join(',')));
    // The minute of the request: one 2xx of 3 ms at every percentile; the others empty.
    expect(lines[2]).toMatch(
      /^2026-11-22T10:18:00Z,1,1,0,0,3,1,1,0,0,0,0,0,0,0,0,0,0,0,0,(\d+\.?\d*),\1,\1$/,
    );
    expect(lines[1]).toBe('2026-11-22T10:17:00Z,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,,');
    const grouped = await get(
      `/consumer-api-key/${id}/usage?granularity=day&groupBy=endpoint&from=${iso(NOW - DAY)}&to=${iso(NOW)}`,
      'text/csv',
    );
    expect(grouped.text.split('\r\n')[0]).toBe(`start,endpoint,${columns}`);
    expect(grouped.text).toContain('"/v1/""quoted"",path"');
  });

  it('refuses ranges beyond retention, over 1,500 buckets or 320,000 series buckets, reversed or malformed, and unknown keys', async () => {
    const id = await key();
    const code = async (query: string) => (await get(`/consumer-api-key/${id}/usage?${query}`)).body.code;
    expect(await code(`granularity=minute&from=${iso(NOW - 49 * HOUR)}&to=${iso(NOW - 48 * HOUR)}`)).toBe(
      'range_beyond_retention',
    );
    expect(await code(`granularity=hour&from=${iso(NOW - 91 * DAY)}&to=${iso(NOW - 90 * DAY)}`)).toBe(
      'range_beyond_retention',
    );
    expect(await code(`granularity=minute&from=${iso(NOW - 26 * HOUR)}&to=${iso(NOW)}`)).toBe(
      'range_too_large',
    );
    // 1,500 minutes exactly (the range is widened to whole minutes: 25 h back from the end of this one).
    expect(
      await code(`granularity=minute&from=${iso(NOW - 25 * HOUR + MIN)}&to=${iso(NOW)}`),
    ).toBeUndefined();
    for (const query of [
      `from=${iso(NOW)}&to=${iso(NOW - HOUR)}`,
      'from=yesterday',
      'granularity=week',
      'groupBy=path',
      'to=2026-02-30T00:00:00Z',
      'extra=1',
    ]) {
      expect(await code(query)).toBe('validation_failed');
    }
    // Series are bounded too (series × buckets): 801 customers over 400 days would be 320,400 buckets.
    const busy = await key('busy');
    for (let i = 0; i < 801; i++)
      recorder.record(requestFacts(busy, { customerId: `customer-${i}`, atMs: NOW - DAY }));
    await recorder.flush();
    const tooMany = await get(
      `/consumer-api-key/${busy}/usage?granularity=day&groupBy=customer&from=${iso(NOW - 399 * DAY)}&to=${iso(NOW)}`,
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({
      code: 'range_too_large',
      error: expect.stringContaining('801 series of 400 buckets'),
    });
    expect(checker.problems('get', '/consumer-api-key/{consumerApiKeyId}/usage', tooMany)).toEqual([]);
    const monthly = await get(
      `/consumer-api-key/${busy}/usage?granularity=month&groupBy=customer&from=${iso(NOW - 399 * DAY)}&to=${iso(NOW)}`,
    );
    expect(monthly.status).toBe(200);
    expect(monthly.body.series).toHaveLength(801);
    const missing = await get('/consumer-api-key/key_nope/usage');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('key_not_found');
  });

  it('sums the fleet and names its busiest keys', async () => {
    const first = await key('busy');
    const second = await key('quiet');
    const hourAgo = NOW - HOUR - 10 * MIN;
    await requests(
      first,
      Array.from({ length: 7 }, () => hourAgo),
    );
    await requests(first, [hourAgo], { ok: false, limited: true });
    await requests(second, [hourAgo, hourAgo]);
    const res = await get(
      '/tollgate/usage?granularity=hour&from=2026-11-22T09:00:00Z&to=2026-11-22T10:00:00Z',
    );
    expect(checker.problems('get', '/tollgate/usage', res)).toEqual([]);
    expect(res.body.buckets).toHaveLength(1);
    expect(res.body.buckets[0]).toMatchObject({ start: '2026-11-22T09:00:00Z' });
    expect(res.body.buckets[0].requests).toBeGreaterThanOrEqual(10);
    expect(res.body.topKeys.slice(0, 2)).toEqual([
      { consumerApiKeyId: first, name: 'busy', requests: 8, rateLimited: 1 },
      { consumerApiKeyId: second, name: 'quiet', requests: 2, rateLimited: 0 },
    ]);
    expect(res.body.topKeys.length).toBeLessThanOrEqual(10);
  });

  it('series buckets have the shape of the key buckets: rate-limited requests and response times, for endpoints and customers, in JSON and CSV', async () => {
    const id = await key();
    await requests(id, [NOW - HOUR, NOW - HOUR], { endpoint: '/v1/s', customer: 'acme', ms: 30 });
    await requests(id, [NOW - HOUR], {
      endpoint: '/v1/s',
      customer: 'acme',
      ok: false,
      limited: true,
      ms: 0,
    });
    const expected = {
      ...ZERO,
      start: '2026-11-22T00:00:00Z',
      requests: 3,
      successful: 2,
      failed: 1,
      rateLimited: 1,
      averageResponseTimeMs: 20,
      cost: 2,
      statusClasses: { ...ZERO.statusClasses, '2xx': 2, '4xx': 1 },
      outcomes: { ...ZERO.outcomes, rateLimited: 1 },
      latencyMs: { p50: near(30), p95: near(30), p99: near(30) },
    };
    for (const by of ['endpoint', 'customer']) {
      const query = `/consumer-api-key/${id}/usage?granularity=day&groupBy=${by}&from=2026-11-22T00:00:00Z&to=2026-11-23T00:00:00Z`;
      const res = await get(query);
      expect(res.body.buckets).toEqual([expected]);
      expect(res.body.series).toHaveLength(1);
      expect(res.body.series[0].buckets).toEqual([expected]);
      const csv = await get(query, 'text/csv');
      expect(csv.text.split('\r\n')[1]).toMatch(
        new RegExp(
          `^2026-11-22T00:00:00Z,"${by === 'endpoint' ? '/v1/s' : 'acme'}",3,2,1,1,20,2,2,0,1,0,0,0,0,0,0,0,0,0,0,\\d+\\.?\\d*,\\d+\\.?\\d*,\\d+\\.?\\d*$`,
        ),
      );
    }
  });

  it('files endpoints and customers under the day and month each request happened in, across an outage over midnight at a month end', async () => {
    const id = await key();
    let down = true;
    const outage = new UsageRecorder(
      new DatabaseUsageSink({
        applyBatch: (batchId, batch) =>
          down ? Promise.reject(new Error('database unreachable')) : repository.applyBatch(batchId, batch),
      }),
      logger,
      new Metrics(),
    );
    const midnight = Date.UTC(2026, 10, 1);
    // One second's batch can straddle midnight: the first, sent once and held.
    const report = { endpoint: '/v1/report', customerId: 'acme' };
    outage.record(requestFacts(id, { ...report, durationMs: 10, atMs: midnight - 500 }));
    outage.record(
      requestFacts(id, { ...report, ...refusal('rateLimited'), durationMs: 40, atMs: midnight + 200 }),
    );
    await outage.flush();
    outage.record(requestFacts(id, { ...report, durationMs: 10, atMs: midnight - 100 }));
    await outage.flush(); // refused: held behind it
    outage.record(
      requestFacts(id, { ...report, ...refusal('rateLimited'), durationMs: 40, atMs: midnight + 10_000 }),
    );
    await outage.flush(); // refused: merged into the batch before it, which spans midnight now
    down = false;
    await outage.stop();
    for (const by of ['endpoint', 'customer'] as const) {
      for (const [granularity, from, to] of [
        ['day', '2026-10-31T00:00:00Z', '2026-11-02T00:00:00Z'],
        ['month', '2026-10-01T00:00:00Z', '2026-12-01T00:00:00Z'],
      ]) {
        const res = await get(
          `/consumer-api-key/${id}/usage?granularity=${granularity}&groupBy=${by}&from=${from}&to=${to}`,
        );
        expect(res.body.series).toHaveLength(1);
        expect(
          res.body.series[0].buckets.map((b: { start: string; requests: number; rateLimited: number }) => [
            b.start.slice(0, 10),
            b.requests,
            b.rateLimited,
          ]),
        ).toEqual(
          granularity === 'day'
            ? [
                ['2026-10-31', 2, 0],
                ['2026-11-01', 2, 2],
              ]
            : [
                ['2026-10-01', 2, 0],
                ['2026-11-01', 2, 2],
              ],
        );
        // The key's own buckets agree.
        expect(res.body.buckets.map((b: { requests: number }) => b.requests)).toEqual([2, 2]);
      }
    }
  });

  it("caps each day and month of the customer series on its own: a key at its lifetime cap names a new month's customers", async () => {
    const id = await key();
    const october = Date.UTC(2026, 9, 15, 12);
    for (let i = 0; i < 10_000; i++)
      recorder.record(requestFacts(id, { endpoint: '/v1/c', customerId: `october-${i}`, atMs: october }));
    await recorder.flush();
    await requests(id, [Date.UTC(2026, 10, 20, 12)], { customer: 'november-new' });
    // The totals of the key's life hold 10,000 customers already: the new one counts under "(other)".
    const totals = await repository.read(id);
    expect(totals.customers.has('november-new')).toBe(false);
    expect(totals.customers.get('(other)')?.requests).toBe(1);
    // November and its 20th have room: the series name the customer.
    const named = async (granularity: string, from: string, to: string) => {
      const res = await get(
        `/consumer-api-key/${id}/usage?granularity=${granularity}&groupBy=customer&from=${from}&to=${to}`,
      );
      return new Map(
        (res.body.series as { customerId: string; buckets: { requests: number }[] }[]).map((s) => [
          s.customerId,
          s.buckets.map((b) => b.requests),
        ]),
      );
    };
    const months = await named('month', '2026-10-01T00:00:00Z', '2026-12-01T00:00:00Z');
    expect(months.get('november-new')).toEqual([0, 1]);
    expect(months.get('october-9999')).toEqual([1, 0]);
    expect(months.has('(other)')).toBe(false);
    expect((await named('day', '2026-11-20T00:00:00Z', '2026-11-21T00:00:00Z')).get('november-new')).toEqual([
      1,
    ]);

    // A month at its cap: the next new customer is "(other)" in the month, and named in its new day.
    for (let i = 1; i < 10_000; i++)
      recorder.record(
        requestFacts(id, {
          endpoint: '/v1/c',
          customerId: `november-${i}`,
          atMs: Date.UTC(2026, 10, 20, 13),
        }),
      );
    await recorder.flush();
    await requests(id, [Date.UTC(2026, 10, 21, 12)], { customer: 'late-november' });
    const november = await named('month', '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z');
    expect(november.size).toBe(10_001);
    expect(november.get('(other)')).toEqual([1]);
    expect(november.has('late-november')).toBe(false);
    expect((await named('day', '2026-11-21T00:00:00Z', '2026-11-22T00:00:00Z')).get('late-november')).toEqual(
      [1],
    );
  }, 60_000);

  it('adds the part of a mixed batch that has no minute (a replica of the previous version) to the minute it is applied in: buckets add up to the totals', async () => {
    const id = await key();
    const usage = emptyKeyUsage();
    // Three requests of one key in one sealed batch: one from a replica that notes minutes (refused by
    // the limiter), two from one that does not.
    usage.endpoints.set('/x', { requests: 3, successful: 2, failed: 1, totalDurationMs: 30, cost: 0 });
    usage.minutes.set(minuteOf(NOW), {
      ...emptyBucket(),
      requests: 1,
      successful: 0,
      failed: 1,
      rateLimited: 1,
      totalDurationMs: 10,
    });
    const batch: UsageBatch = new Map([[id, usage]]);
    await new UsageRepository(storage.handle.db, () => NOW).applyBatch('mixed-' + id, batch);
    for (const granularity of ['minute', 'hour', 'day', 'month']) {
      const res = await get(
        `/consumer-api-key/${id}/usage?granularity=${granularity}&from=${iso(NOW - MIN)}&to=${iso(NOW)}`,
      );
      expect(res.body.buckets.at(-1)).toMatchObject({
        requests: 3,
        successful: 2,
        failed: 1,
        rateLimited: 1,
        averageResponseTimeMs: 10,
      });
      expect(sum(res.body.buckets)).toBe(3);
    }
    // Without days, the endpoint's requests are filed under the day the batch is applied.
    const series = await get(
      `/consumer-api-key/${id}/usage?granularity=day&groupBy=endpoint&from=${iso(NOW - MIN)}&to=${iso(NOW)}`,
    );
    expect(series.body.series).toEqual([
      {
        endpoint: '/x',
        buckets: [
          expect.objectContaining({ start: '2026-11-22T00:00:00Z', requests: 3, successful: 2, failed: 1 }),
        ],
      },
    ]);
  });

  it('makes customer ids and paths safe to open in a spreadsheet: a cell that would run as a formula starts with a quote (OWASP)', async () => {
    const id = await key();
    // A tab or CR never reaches usage in a customer id (src/plans/customer-id.ts), nor in a path.
    const names = [
      '=HYPERLINK("http://attacker.example","pay")',
      '+41+1',
      '-2+3',
      '@SUM(A1:A9)',
      'plain',
      'a,=1+1',
    ];
    for (const name of names) recorder.record(requestFacts(id, { customerId: name, atMs: NOW - MIN }));
    await recorder.flush();
    const csv = (
      await get(
        `/consumer-api-key/${id}/usage?granularity=day&groupBy=customer&from=2026-11-22T00:00:00Z&to=2026-11-23T00:00:00Z`,
        'text/csv',
      )
    ).text;
    const cells = parseCsv(csv)
      .slice(1)
      .map((row) => row[1]!);
    expect(cells.sort()).toEqual(
      [
        '\'=HYPERLINK("http://attacker.example","pay")',
        "'+41+1",
        "'-2+3",
        "'@SUM(A1:A9)",
        'plain',
        'a,=1+1',
      ].sort(),
    );
    // Every name is quoted, so no separator inside one (a comma, or Excel's semicolon) starts a cell.
    for (const line of csv
      .trim()
      .split(/\r\n(?=\d{4}-)/)
      .slice(1))
      expect(line).toMatch(/^[^,]+,"/);
  });

  it('accepts from and to with a fraction of a second (toISOString()), cut to whole seconds', async () => {
    const id = await key();
    const res = await get(
      `/consumer-api-key/${id}/usage?from=${new Date(NOW - HOUR).toISOString()}&to=${new Date(NOW).toISOString()}`,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      granularity: 'minute',
      from: '2026-11-22T09:20:00Z',
      to: '2026-11-22T10:21:00Z',
    });
    expect(
      (await get(`/tollgate/usage?from=2026-11-22T09:00:00.5Z&to=2026-11-22T10:00:00.123456789Z`)).status,
    ).toBe(200);
    expect((await get(`/consumer-api-key/${id}/usage?from=2026-11-22T09:00:00.Z`)).body.code).toBe(
      'validation_failed',
    );
  });

  it('answers 404 for an unknown key before judging its range', async () => {
    for (const query of [
      `granularity=minute&from=${iso(NOW - 26 * HOUR)}&to=${iso(NOW)}`,
      `granularity=minute&from=${iso(NOW - 49 * HOUR)}&to=${iso(NOW - 48 * HOUR)}`,
      `from=${iso(NOW)}&to=${iso(NOW - HOUR)}`,
      'granularity=hour&groupBy=endpoint',
    ]) {
      const res = await get(`/consumer-api-key/key_unknown/usage?${query}`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('key_not_found');
    }
  });

  it('deletes what is past retention at every granularity, in the key, endpoint, customer and route tables, in batches', async () => {
    const id = await key();
    const settings = { minuteHours: 48, hourDays: 90, dayDays: 400, monthMonths: 60 };
    // Each just past one granularity's retention, and one an hour old that every granularity keeps.
    const ages = {
      minute: NOW - 49 * HOUR,
      hour: NOW - 91 * DAY,
      day: NOW - 401 * DAY,
      month: Date.UTC(2021, 9, 15),
      recent: NOW - HOUR,
    };
    for (const at of Object.values(ages))
      await requests(id, [at], { endpoint: '/v1/kept', customer: 'acme' });
    const rows = async () => {
      const counted: Record<string, number> = {};
      for (const table of [
        'usage_buckets',
        'usage_endpoint_buckets',
        'usage_customer_buckets',
        'usage_route_buckets',
      ] as const) {
        const found = await storage.handle.db
          .selectFrom(table)
          .select('granularity')
          .where('key_id', '=', id)
          .execute();
        for (const { granularity } of found)
          counted[`${table}.${granularity}`] = (counted[`${table}.${granularity}`] ?? 0) + 1;
      }
      return counted;
    };
    expect(await rows()).toEqual({
      'usage_buckets.minute': 5,
      'usage_buckets.hour': 5,
      'usage_buckets.day': 5,
      'usage_buckets.month': 4,
      'usage_endpoint_buckets.day': 5,
      'usage_endpoint_buckets.month': 4,
      'usage_customer_buckets.day': 5,
      'usage_customer_buckets.month': 4,
      'usage_route_buckets.day': 5,
      'usage_route_buckets.month': 4,
    });
    const history = new UsageHistoryRepository(storage.handle.db);
    if (kind === 'postgres') {
      // Another replica pruning holds the lock: this one deletes nothing meanwhile, and waits for nothing.
      const other = new pg.Client({
        connectionString: (storage.handle.pool!.options as { connectionString: string }).connectionString,
      });
      await other.connect();
      try {
        await other.query('begin');
        await other.query('select pg_advisory_xact_lock($1)', [ADVISORY_PRUNE_LOCK]);
        await pruneUsage(history, settings, logger, NOW);
        expect(Object.values(await rows()).reduce((n, c) => n + c, 0)).toBe(46);
        await other.query('commit');
      } finally {
        await other.end();
      }
    }
    // One row per transaction: batches follow each other until none is left.
    for (const granularity of ['minute', 'hour', 'day', 'month'] as const) {
      const deleted = await history.prune(
        granularity,
        new Date(retainedSince(settings, granularity, NOW)),
        1,
      );
      expect(deleted).toBeGreaterThanOrEqual({ minute: 4, hour: 3, day: 8, month: 4 }[granularity]);
    }
    expect(await rows()).toEqual({
      'usage_buckets.minute': 1,
      'usage_buckets.hour': 2,
      'usage_buckets.day': 3,
      'usage_buckets.month': 3,
      'usage_endpoint_buckets.day': 3,
      'usage_endpoint_buckets.month': 3,
      'usage_customer_buckets.day': 3,
      'usage_customer_buckets.month': 3,
      'usage_route_buckets.day': 3,
      'usage_route_buckets.month': 3,
    });
    // What is kept still answers: the hours of the last 60 days, the days of the last 399.
    expect(
      sum(
        (
          await get(
            `/consumer-api-key/${id}/usage?granularity=hour&from=${iso(NOW - 60 * DAY)}&to=${iso(NOW)}`,
          )
        ).body.buckets,
      ),
    ).toBe(2);
    expect(
      sum(
        (
          await get(
            `/consumer-api-key/${id}/usage?granularity=day&from=${iso(NOW - 399 * DAY)}&to=${iso(NOW)}`,
          )
        ).body.buckets,
      ),
    ).toBe(3);
  });
});

/** RFC 4180: rows of cells, quoted cells unquoted. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  return rows;
}
