/**
 * Usage over time (contract section 8), on embedded PGlite and a real Postgres: buckets written with
 * each batch, exactly once, adding up to the totals; the API's zero-filled, aligned buckets, defaults,
 * groupBy, CSV, range errors and pending usage; the fleet view with its busiest keys; retention.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { sql } from 'kysely';
import request from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { migrate } from '../../src/store/migrate.js';
import { UsageHistoryRepository } from '../../src/usage/history-repository.js';
import { PostgresUsageSink } from '../../src/usage/postgres-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRetention } from '../../src/usage/retention.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const AUTH = { Authorization: `Bearer ${ROOT_TOKEN}` };
/** Sunday 2026-11-22 10:20:30 UTC. */
const NOW = Date.UTC(2026, 10, 22, 10, 20, 30);
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const logger = createLogger('silent');

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
    recorder = new UsageRecorder(new PostgresUsageSink(repository), logger, new Metrics());
    app = createManagementApp(managementDeps(storage.handle.db, { usage: new UsageReader(repository, [recorder]), rootToken: ROOT_TOKEN, logger, clock: () => now }));
  }, 60_000);

  afterAll(() => storage.dispose());

  const get = (path: string, accept = 'application/json') => request(app).get(path).set(AUTH).set('Accept', accept);
  async function key(name = 'k'): Promise<string> {
    const res = await request(app).post('/consumer-api-key/create').set(AUTH).send({ name });
    return res.body.id;
  }
  /** Records requests of a key at given instants, then writes them as one batch. */
  async function requests(keyId: string, at: number[], options: { ok?: boolean; limited?: boolean; endpoint?: string; customer?: string; ms?: number } = {}) {
    for (const t of at) recorder.record(keyId, options.endpoint ?? '/v1/a', options.customer, options.ok ?? true, options.ms ?? 10, options.limited ?? false, t);
    await recorder.flush();
  }
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z';
  const sum = (buckets: { requests: number }[]) => buckets.reduce((n, b) => n + b.requests, 0);

  it('answers every minute of the last 3 hours zero-filled, and the buckets of each granularity add up to the totals', async () => {
    now = NOW;
    const id = await key();
    await requests(id, [NOW - 2 * HOUR - 5 * MIN, NOW - 2 * HOUR - 5 * MIN + 1, NOW - 30 * MIN, NOW - 10_000]);
    await requests(id, [NOW - 20 * MIN], { ok: false, limited: true, ms: 2 });
    await requests(id, [NOW - 25 * HOUR], { ok: false, ms: 40 });
    const res = await get(`/consumer-api-key/${id}/usage?from=${iso(NOW - 3 * HOUR)}&to=${iso(NOW)}`);
    expect(checker.problems('get', '/consumer-api-key/{consumerApiKeyId}/usage', res)).toEqual([]);
    expect(res.body).toMatchObject({ consumerApiKeyId: id, granularity: 'minute', from: '2026-11-22T07:20:00Z', to: '2026-11-22T10:21:00Z' });
    expect(res.body.buckets).toHaveLength(181);
    expect(res.body.buckets[0]).toEqual({ start: '2026-11-22T07:20:00Z', requests: 0, successful: 0, failed: 0, rateLimited: 0, averageResponseTimeMs: 0 });
    const at = (start: string) => res.body.buckets.find((b: { start: string }) => b.start === start);
    expect(at('2026-11-22T08:15:00Z')).toMatchObject({ requests: 2, successful: 2, failed: 0, averageResponseTimeMs: 10 });
    expect(at('2026-11-22T10:00:00Z')).toMatchObject({ requests: 1, successful: 0, failed: 1, rateLimited: 1, averageResponseTimeMs: 2 });
    expect(sum(res.body.buckets)).toBe(5);
    for (let i = 1; i < res.body.buckets.length; i++) expect(Date.parse(res.body.buckets[i].start) - Date.parse(res.body.buckets[i - 1].start)).toBe(MIN);

    const total = (await get(`/consumer-api-key/${id}`)).body.usage.totalRequests;
    expect(total).toBe(6);
    for (const [granularity, from] of [['hour', NOW - 3 * DAY], ['day', NOW - 30 * DAY], ['month', NOW - 300 * DAY]] as const) {
      const whole = await get(`/consumer-api-key/${id}/usage?granularity=${granularity}&from=${iso(from)}&to=${iso(NOW + MIN)}`);
      expect(whole.status).toBe(200);
      expect(sum(whole.body.buckets)).toBe(total);
    }
    // Each batch was applied once: writing nothing more changes nothing.
    await recorder.flush();
    expect(sum((await get(`/consumer-api-key/${id}/usage?granularity=day&from=${iso(NOW - 3 * DAY)}&to=${iso(NOW)}`)).body.buckets)).toBe(6);
  });

  it('picks the granularity from the range: minutes up to 3 h, hours up to 4 days, days beyond; the last 24 h by default', async () => {
    const id = await key();
    const granularity = async (query: string) => (await get(`/consumer-api-key/${id}/usage?${query}`)).body;
    expect(await granularity('')).toMatchObject({ granularity: 'hour', from: '2026-11-21T10:00:00Z', to: '2026-11-22T11:00:00Z' });
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
    recorder.record(id, '/v1/live', undefined, true, 5, false, NOW - 1_000);
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
    const byEndpoint = await get(`/consumer-api-key/${id}/usage?granularity=day&groupBy=endpoint&from=${iso(NOW - 2 * DAY)}&to=${iso(NOW)}`);
    expect(checker.problems('get', '/consumer-api-key/{consumerApiKeyId}/usage', byEndpoint)).toEqual([]);
    expect(byEndpoint.body.series.map((s: { endpoint: string; buckets: { requests: number }[] }) => [s.endpoint, s.buckets.map((b) => b.requests)])).toEqual([
      ['/v1/a', [0, 0, 3]],
      ['/v1/b', [0, 2, 0]],
    ]);
    const byCustomer = await get(`/consumer-api-key/${id}/usage?granularity=day&groupBy=customer&from=${iso(NOW - 2 * DAY)}&to=${iso(NOW)}`);
    expect(byCustomer.body.series.map((s: { customerId: string }) => s.customerId)).toEqual(['globex', 'acme']);
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
    expect(lines[0]).toBe('start,requests,successful,failed,rateLimited,averageResponseTimeMs');
    expect(lines.slice(1)).toEqual(json.buckets.map((b: Record<string, unknown>) => [b.start, b.requests, b.successful, b.failed, b.rateLimited, b.averageResponseTimeMs].join(',')));
    const grouped = await get(`/consumer-api-key/${id}/usage?granularity=day&groupBy=endpoint&from=${iso(NOW - DAY)}&to=${iso(NOW)}`, 'text/csv');
    expect(grouped.text.split('\r\n')[0]).toBe('start,endpoint,requests,successful,failed,rateLimited,averageResponseTimeMs');
    expect(grouped.text).toContain('"/v1/""quoted"",path"');
  });

  it('refuses ranges beyond retention, over 1,500 buckets, reversed or malformed, and unknown keys', async () => {
    const id = await key();
    const code = async (query: string) => (await get(`/consumer-api-key/${id}/usage?${query}`)).body.code;
    expect(await code(`granularity=minute&from=${iso(NOW - 49 * HOUR)}&to=${iso(NOW - 48 * HOUR)}`)).toBe('range_beyond_retention');
    expect(await code(`granularity=hour&from=${iso(NOW - 91 * DAY)}&to=${iso(NOW - 90 * DAY)}`)).toBe('range_beyond_retention');
    expect(await code(`granularity=minute&from=${iso(NOW - 26 * HOUR)}&to=${iso(NOW)}`)).toBe('range_too_large');
    // 1,500 minutes exactly (the range is widened to whole minutes: 25 h back from the end of this one).
    expect(await code(`granularity=minute&from=${iso(NOW - 25 * HOUR + MIN)}&to=${iso(NOW)}`)).toBeUndefined();
    for (const query of [`from=${iso(NOW)}&to=${iso(NOW - HOUR)}`, 'from=yesterday', 'granularity=week', 'groupBy=path', 'to=2026-02-30T00:00:00Z', 'extra=1']) {
      expect(await code(query)).toBe('validation_failed');
    }
    const missing = await get('/consumer-api-key/key_nope/usage');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('key_not_found');
  });

  it('sums the fleet and names its busiest keys', async () => {
    const first = await key('busy');
    const second = await key('quiet');
    const hourAgo = NOW - HOUR - 10 * MIN;
    await requests(first, Array.from({ length: 7 }, () => hourAgo));
    await requests(first, [hourAgo], { ok: false, limited: true });
    await requests(second, [hourAgo, hourAgo]);
    const res = await get('/tollgate/usage?granularity=hour&from=2026-11-22T09:00:00Z&to=2026-11-22T10:00:00Z');
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

  it('deletes buckets past retention', async () => {
    const id = await key();
    await requests(id, [NOW - 50 * HOUR]);
    const history = new UsageHistoryRepository(storage.handle.db);
    const minutes = async () => (await sql<{ n: number }>`select count(*)::int as n from usage_buckets where key_id = ${id} and granularity = 'minute'`.execute(storage.handle.db)).rows[0]!.n;
    expect(await minutes()).toBe(1);
    await new UsageRetention(history, { minuteHours: 48, hourDays: 90, dayDays: 400, monthMonths: 60 }, logger).prune(NOW);
    expect(await minutes()).toBe(0);
    // The hour, day and month of the same request stay.
    expect(sum((await get(`/consumer-api-key/${id}/usage?granularity=hour&from=${iso(NOW - 3 * DAY)}&to=${iso(NOW)}`)).body.buckets)).toBe(1);
  });
});
