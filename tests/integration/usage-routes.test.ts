/**
 * Usage by route (docs/guides/routes.md, docs/decisions/0035) on the embedded SQLite store and a real
 * Postgres: `groupBy=route` for a key, a consumer and the fleet, by day and by month, in JSON and
 * CSV, with `routeId` null for the catch-all; a deleted route's series kept under its id; at most
 * 1,000 routes a key per day and per month, the rest under "(other)"; pending usage shown under its
 * route; usage from a version before routes in no route series; the 320,000 series-bucket bound.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { migrate } from '../../src/store/migrate.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { emptyBucket, emptyKeyUsage, type UsageBatch } from '../../src/usage/usage.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';
import { refused, requestFacts } from '../helpers/request-facts.js';
import type { RequestFacts } from '../../src/usage/usage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
/** Sunday 2026-11-22 10:20:30 UTC. */
const NOW = Date.UTC(2026, 10, 22, 10, 20, 30);
const HOUR = 3_600_000;
const DAY = 86_400_000;
const logger = createLogger('silent');
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z';

interface Series {
  routeId: string | null;
  buckets: { start: string; requests: number; cost: number; rateLimited: number }[];
}
/** Each series as [routeId, requests per bucket]. */
const shape = (series: Series[]) => series.map((s) => [s.routeId, s.buckets.map((b) => b.requests)]);

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('usage by route on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let recorder: UsageRecorder;
  let repository: UsageRepository;

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    repository = new UsageRepository(storage.handle.db, () => NOW);
    recorder = new UsageRecorder(new DatabaseUsageSink(repository), logger, new Metrics());
    app = createManagementApp(
      managementDeps(storage.handle.db, {
        usage: new UsageReader(repository, [recorder]),
        rootToken: ROOT_TOKEN,
        logger,
        clock: () => NOW,
      }),
    );
  }, 60_000);

  afterAll(() => storage.dispose());

  const get = (path: string, accept = 'application/json') =>
    request(app).get(path).set(AUTH).set('Accept', accept);
  const post = (path: string, body: object) => request(app).post(path).set(AUTH).send(body);
  async function key(name = 'k', consumerId?: string): Promise<string> {
    return (await post('/consumer-api-key/create', { name, ...(consumerId && { consumerId }) })).body.id;
  }
  /** Records `n` requests of a key with these facts, then writes them as one batch (unless `pending`). */
  async function requests(
    keyId: string,
    n: number,
    facts: Partial<RequestFacts>,
    pending = false,
  ): Promise<void> {
    for (let i = 0; i < n; i++) recorder.record(requestFacts(keyId, { atMs: NOW - HOUR, ...facts }));
    if (!pending) await recorder.flush();
  }
  const days = `granularity=day&from=${iso(NOW - 2 * DAY)}&to=${iso(NOW)}`;

  it("groups a key's usage by route by day and by month, the catch-all as null, most requests first: the series add up to its buckets", async () => {
    const id = await key();
    await requests(id, 3, { routeId: 'search', cost: 5 });
    await requests(id, 2, { routeId: 'lookup', atMs: NOW - DAY - HOUR });
    await requests(id, 1, { routeId: null, ...refused('rateLimited') });
    const res = await get(`/consumer-api-key/${id}/usage?${days}&groupBy=route`);
    expect(res.status).toBe(200);
    expect(checker.problems('get', '/consumer-api-key/{consumerApiKeyId}/usage', res)).toEqual([]);
    expect(shape(res.body.series)).toEqual([
      ['search', [0, 0, 3]],
      ['lookup', [0, 2, 0]],
      [null, [0, 0, 1]],
    ]);
    const series = res.body.series as Series[];
    expect(series[0]!.buckets[2]).toMatchObject({ cost: 15, rateLimited: 0 });
    expect(series[2]!.buckets[2]).toMatchObject({ cost: 0, rateLimited: 1 });
    for (const [i, bucket] of (res.body.buckets as Series['buckets']).entries())
      expect(series.reduce((n, s) => n + s.buckets[i]!.requests, 0)).toBe(bucket.requests);
    const month = await get(
      `/consumer-api-key/${id}/usage?granularity=month&from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&groupBy=route`,
    );
    expect(shape(month.body.series)).toEqual([
      ['search', [3]],
      ['lookup', [2]],
      [null, [1]],
    ]);
    // Like endpoints and customers: day and month only.
    const hourly = await get(`/consumer-api-key/${id}/usage?granularity=hour&groupBy=route`);
    expect(hourly.status).toBe(400);
    expect(hourly.body).toMatchObject({ code: 'validation_failed', details: [{ field: 'groupBy' }] });
  });

  it('answers the route series as CSV, the catch-all with an empty routeId', async () => {
    const id = await key();
    await requests(id, 2, { routeId: 'search' });
    await requests(id, 1, { routeId: null });
    const csv = await get(
      `/consumer-api-key/${id}/usage?granularity=day&from=${iso(NOW - DAY)}&to=${iso(NOW)}&groupBy=route`,
      'text/csv',
    );
    expect(csv.status).toBe(200);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toMatch(/^start,routeId,requests,successful,failed,/);
    expect(lines.slice(1).map((l) => l.split(',').slice(0, 3))).toEqual([
      ['2026-11-21T00:00:00Z', '"search"', '0'],
      ['2026-11-22T00:00:00Z', '"search"', '2'],
      ['2026-11-21T00:00:00Z', '""', '0'],
      ['2026-11-22T00:00:00Z', '""', '1'],
    ]);
  });

  it("keeps a deleted route's series under its id; a route created again with that id continues it", async () => {
    const route = { routeId: 'legacy', match: { pathPrefix: '/legacy' }, upstreamUrl: 'http://127.0.0.1:9' };
    expect((await post('/tollgate/routes', route)).status).toBe(201);
    const id = await key();
    await requests(id, 4, { routeId: 'legacy', atMs: NOW - DAY - HOUR });
    expect((await request(app).delete('/tollgate/routes/legacy').set(AUTH)).status).toBe(200);
    expect(shape((await get(`/consumer-api-key/${id}/usage?${days}&groupBy=route`)).body.series)).toEqual([
      ['legacy', [0, 4, 0]],
    ]);
    expect((await post('/tollgate/routes', route)).status).toBe(201);
    await requests(id, 1, { routeId: 'legacy' });
    expect(shape((await get(`/consumer-api-key/${id}/usage?${days}&groupBy=route`)).body.series)).toEqual([
      ['legacy', [0, 4, 1]],
    ]);
  });

  it("groups a consumer's usage by route: what its keys did while they belonged to it", async () => {
    const consumerId = (await post('/tollgate/consumers', { name: 'acme' })).body.consumerId as string;
    const [a, b] = [await key('a', consumerId), await key('b', consumerId)];
    await requests(a, 2, { routeId: 'search', consumerId });
    await requests(b, 3, { routeId: 'search', consumerId });
    await requests(b, 1, { routeId: null, consumerId });
    // Before it belonged to the consumer: not the consumer's.
    await requests(a, 7, { routeId: 'search', consumerId: null });
    const res = await get(`/tollgate/consumers/${consumerId}/usage?${days}&groupBy=route`);
    expect(res.status).toBe(200);
    expect(checker.problems('get', '/tollgate/consumers/{consumerId}/usage', res)).toEqual([]);
    expect(shape(res.body.series)).toEqual([
      ['search', [0, 0, 5]],
      [null, [0, 0, 1]],
    ]);
    // The key's own series count all of it.
    expect(shape((await get(`/consumer-api-key/${a}/usage?${days}&groupBy=route`)).body.series)).toEqual([
      ['search', [0, 0, 9]],
    ]);
  });

  it('sums every key by route for the fleet, in JSON and CSV, day and month only', async () => {
    const at = NOW - 40 * DAY;
    const range = `granularity=day&from=${iso(at - HOUR)}&to=${iso(at + HOUR)}`;
    const [a, b] = [await key(), await key()];
    await requests(a, 2, { routeId: 'fleet-search', atMs: at });
    await requests(b, 3, { routeId: 'fleet-search', atMs: at });
    await requests(b, 1, { routeId: 'fleet-lookup', atMs: at });
    const res = await get(`/tollgate/usage?${range}&groupBy=route`);
    expect(res.status).toBe(200);
    expect(checker.problems('get', '/tollgate/usage', res)).toEqual([]);
    expect(shape(res.body.series)).toEqual([
      ['fleet-search', [5]],
      ['fleet-lookup', [1]],
    ]);
    expect(res.body.buckets[0].requests).toBe(6);
    const csv = await get(`/tollgate/usage?${range}&groupBy=route`, 'text/csv');
    expect(
      csv.text
        .trim()
        .split('\r\n')
        .map((l) => l.split(',').slice(0, 3)),
    ).toEqual([
      ['start', 'routeId', 'requests'],
      [iso(at - (at % DAY)), '"fleet-search"', '5'],
      [iso(at - (at % DAY)), '"fleet-lookup"', '1'],
    ]);
    // Without groupBy, no series; the fleet groups by nothing else; not below a day.
    expect((await get(`/tollgate/usage?${range}`)).body.series).toBeUndefined();
    expect((await get(`/tollgate/usage?${range}&groupBy=endpoint`)).body.code).toBe('validation_failed');
    expect((await get('/tollgate/usage?granularity=hour&groupBy=route')).body).toMatchObject({
      code: 'validation_failed',
      details: [{ field: 'groupBy' }],
    });
  });

  it('shows usage not yet written under its route', async () => {
    const id = await key();
    await requests(id, 2, { routeId: 'search' });
    await requests(id, 1, { routeId: 'search' }, true);
    await requests(id, 1, { routeId: 'fresh' }, true);
    expect(shape((await get(`/consumer-api-key/${id}/usage?${days}&groupBy=route`)).body.series)).toEqual([
      ['search', [0, 0, 3]],
      ['fresh', [0, 0, 1]],
    ]);
    await recorder.flush();
  });

  it('holds at most 1,000 routes of a key per day and per month, the rest under "(other)", each period on its own', async () => {
    const id = await key();
    for (let i = 0; i < 1_000; i++) recorder.record(requestFacts(id, { routeId: `r${i}`, atMs: NOW - DAY }));
    await recorder.flush();
    // A later batch of the same day and month: its new route is beyond both caps.
    await requests(id, 2, { routeId: 'late', atMs: NOW - DAY + HOUR });
    await requests(id, 1, { routeId: 'r7', atMs: NOW - DAY + HOUR });
    const day = (await get(`/consumer-api-key/${id}/usage?${days}&groupBy=route`)).body.series as Series[];
    expect(day).toHaveLength(1_001);
    expect(day.slice(0, 2).map((s) => [s.routeId, s.buckets[1]!.requests])).toEqual([
      ['(other)', 2],
      ['r7', 2],
    ]);
    expect(day.some((s) => s.routeId === 'late')).toBe(false);
    // A new month has room again.
    await requests(id, 1, { routeId: 'late', atMs: Date.UTC(2026, 10, 1) - HOUR });
    const october = await get(
      `/consumer-api-key/${id}/usage?granularity=month&from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z&groupBy=route`,
    );
    expect(shape(october.body.series)).toEqual([['late', [1]]]);
  });

  it('files usage from a version before routes (days without routes) in no route series, while its buckets count it', async () => {
    const id = await key();
    const usage = emptyKeyUsage();
    const day = NOW - (NOW % DAY);
    const counts = { ...emptyBucket(), requests: 4, successful: 4 };
    usage.endpoints.set('/v1/a', { requests: 4, successful: 4, failed: 0, totalDurationMs: 0, cost: 0 });
    usage.minutes.set(NOW - (NOW % 60_000), counts);
    usage.days.set(day, { endpoints: new Map([['/v1/a', counts]]), customers: new Map(), routes: new Map() });
    const batch: UsageBatch = new Map([[id, usage]]);
    expect(await repository.applyBatch('before-routes', batch)).toBe(true);
    await requests(id, 1, { routeId: 'search' });
    const res = await get(`/consumer-api-key/${id}/usage?${days}&groupBy=route`);
    expect(res.body.buckets[2].requests).toBe(5);
    expect(shape(res.body.series)).toEqual([['search', [0, 0, 1]]]);
  });

  it('refuses a route answer over 320,000 series buckets, counted before reading, and answers it by month', async () => {
    const id = await key();
    for (let i = 0; i < 801; i++)
      recorder.record(requestFacts(id, { routeId: `bound-${i}`, atMs: NOW - HOUR }));
    await recorder.flush();
    const range = `from=${iso(NOW - 399 * DAY)}&to=${iso(NOW)}&groupBy=route`;
    const refusal = await get(`/consumer-api-key/${id}/usage?granularity=day&${range}`);
    expect(refusal.status).toBe(400);
    expect(refusal.body).toMatchObject({ code: 'range_too_large' });
    expect(refusal.body.error).toContain('801 series of 400 buckets');
    expect((await get(`/tollgate/usage?granularity=day&${range}`)).body.code).toBe('range_too_large');
    const monthly = await get(`/consumer-api-key/${id}/usage?granularity=month&${range}`);
    expect(monthly.status).toBe(200);
    expect(monthly.body.series).toHaveLength(801);
  });
});
