/**
 * Request facts through the single-node pipeline (recorder → sink → store, exactly once) on the
 * embedded SQLite store and a real Postgres (docs/guides/consumers.md, docs/guides/usage-and-billing.md): usage filed under the
 * consumer its key belonged to at the time, a key's own reads summing across its consumers, a
 * consumer's buckets adding up to its totals, and every bucket's cost, status classes, outcomes and
 * latency percentiles, stored and pending alike.
 */
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { UsageHistory, type BucketView } from '../../src/usage/history.js';
import { UsageHistoryRepository } from '../../src/usage/history-repository.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { STORAGES, type Storage } from '../helpers/management-storage.js';
import { refused, requestFacts } from '../helpers/request-facts.js';

const logger = createLogger('silent');
const DAY = 86_400_000;
/** Monday 2026-11-23 12:00 UTC. */
const NOW = Date.UTC(2026, 10, 23, 12);
const MONTH = [Date.UTC(2026, 10, 1), Date.UTC(2026, 11, 1)] as const;
const sum = (buckets: readonly BucketView[], field: 'requests' | 'cost' = 'requests') =>
  buckets.reduce((n, b) => n + b[field], 0);

/** The exact `p`-th percentile by nearest rank. */
const exactPercentile = (values: readonly number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.ceil((p / 100) * values.length) - 1]!;

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'usage filed under consumers on %s storage',
  (kind) => {
    let storage: Storage;
    let repository: UsageRepository;
    let recorder: UsageRecorder;
    let reader: UsageReader;
    let history: UsageHistory;
    let keys: KeyRepository;

    beforeAll(async () => {
      storage = await STORAGES[kind]();
      await migrate(storage.handle);
      repository = new UsageRepository(storage.handle.db, () => NOW);
      recorder = new UsageRecorder(new DatabaseUsageSink(repository), logger, new Metrics());
      reader = new UsageReader(repository, [recorder]);
      history = new UsageHistory(new UsageHistoryRepository(storage.handle.db), reader);
      keys = new KeyRepository(storage.handle.db);
    }, 60_000);

    afterAll(() => storage.dispose());

    async function key(): Promise<string> {
      const id = 'key_' + randomBytes(6).toString('hex');
      await keys.insert({
        id,
        name: id,
        secretHash: randomBytes(32),
        secretCiphertext: randomBytes(40),
        createdAt: new Date(NOW - 30 * DAY),
      });
      return id;
    }
    const consumer = () => 'con_' + randomBytes(6).toString('hex');

    it('files each request under the consumer its key belonged to: a moved key keeps its history with the old one, and its own reads sum across both', async () => {
      const [moved, stays] = [await key(), await key()];
      const [first, second] = [consumer(), consumer()];
      // `moved` belongs to the first consumer for three requests, then to the second.
      for (let i = 0; i < 3; i++)
        recorder.record(
          requestFacts(moved, {
            consumerId: first,
            endpoint: '/v1/search',
            customerId: 'acme',
            atMs: NOW - 2 * DAY,
          }),
        );
      recorder.record(
        requestFacts(stays, {
          consumerId: first,
          endpoint: '/v1/lookup',
          ...refused('rateLimited'),
          atMs: NOW - 2 * DAY,
        }),
      );
      await recorder.flush();
      recorder.record(
        requestFacts(moved, {
          consumerId: second,
          endpoint: '/v1/search',
          customerId: 'acme',
          atMs: NOW - DAY,
        }),
      );
      recorder.record(requestFacts(moved, { consumerId: second, endpoint: '/v1/other', atMs: NOW - DAY }));
      await recorder.flush();
      // One more of the second consumer's, still in this process: shown, not stored yet.
      recorder.record(requestFacts(moved, { consumerId: second, endpoint: '/v1/other', atMs: NOW - 1_000 }));

      // The key's own reads: everything it did, whoever it belonged to.
      const detail = await reader.read(moved);
      expect(detail).toMatchObject({ totalRequests: 6, cost: 6 });
      expect(sum((await history.forKey(moved, 'day', ...MONTH)).buckets)).toBe(6);

      // The first consumer keeps the three requests of the moved key, though the key is the second's now.
      const firstTotals = await reader.readConsumer(first, [stays]);
      expect(firstTotals).toMatchObject({
        totalRequests: 4,
        successfulRequests: 3,
        failedRequests: 1,
        cost: 3,
      });
      expect(firstTotals.endpoints.map((e) => [e.endpoint, e.requests, e.cost])).toEqual([
        ['/v1/search', 3, 3],
        ['/v1/lookup', 1, 0],
      ]);
      expect(firstTotals.usageByCustomer).toEqual([
        { customerId: 'acme', requests: 3, successful: 3, failed: 0 },
      ]);
      const firstDays = (await history.forConsumer(first, [stays], 'day', ...MONTH)).buckets;
      expect(
        firstDays.filter((b) => b.requests > 0).map((b) => [b.start, b.requests, b.rateLimited, b.cost]),
      ).toEqual([[NOW - 2 * DAY - 12 * 3_600_000, 4, 1, 3]]);

      const secondTotals = await reader.readConsumer(second, [moved]);
      expect(secondTotals).toMatchObject({ totalRequests: 3, cost: 3 });
      // A consumer's buckets add up to its totals at every granularity, pending usage included.
      for (const [granularity, from] of [
        ['hour', NOW - 3 * DAY],
        ['day', MONTH[0]],
        ['month', MONTH[0]],
      ] as const) {
        expect(sum((await history.forConsumer(first, [stays], granularity, from, MONTH[1])).buckets)).toBe(
          firstTotals.totalRequests,
        );
        expect(sum((await history.forConsumer(second, [moved], granularity, from, MONTH[1])).buckets)).toBe(
          secondTotals.totalRequests,
        );
        expect(
          sum((await history.forConsumer(second, [moved], granularity, from, MONTH[1])).buckets, 'cost'),
        ).toBe(secondTotals.cost);
      }

      const series = await history.seriesForConsumer(second, [moved], 'endpoint', 'month', ...MONTH, NOW);
      expect(series.map((s) => [s.name, s.buckets.map((b) => b.requests)])).toEqual([
        ['/v1/other', [2]],
        ['/v1/search', [1]],
      ]);
      expect(await history.seriesCount({ consumerId: second }, 'endpoint', 'month', ...MONTH)).toBe(2);
      const customers = await history.seriesForConsumer(
        first,
        [stays],
        'customer',
        'day',
        NOW - 2 * DAY - 12 * 3_600_000,
        NOW - DAY - 12 * 3_600_000,
        NOW,
      );
      expect(customers.map((s) => [s.name, s.buckets.map((b) => b.requests)])).toEqual([['acme', [3]]]);

      // The fleet's busiest consumers count what is stored (the pending request is not yet).
      const top = await history.topConsumers('month', ...MONTH);
      expect(top.filter((c) => c.consumerId === first || c.consumerId === second)).toEqual([
        { consumerId: first, requests: 4, rateLimited: 1 },
        { consumerId: second, requests: 2, rateLimited: 0 },
      ]);
      await recorder.flush();
      expect(await reader.readConsumer(second, [])).toMatchObject({ totalRequests: 3 });
    });

    it("caps a key's paths across all its consumers, as one key", async () => {
      const id = await key();
      const [first, second] = [consumer(), consumer()];
      const request = (consumerId: string, endpoint: string) =>
        recorder.record(requestFacts(id, { consumerId, endpoint, atMs: NOW - 60_000 }));
      for (let i = 0; i < 998; i++) request(first, `/p/${i}`);
      await recorder.flush();
      // Paths the key holds count once, whichever consumers they were filed under: two new ones fit.
      request(second, '/p/0');
      request(second, '/p/1');
      await recorder.flush();
      request(second, '/new/1');
      request(second, '/new/2');
      await recorder.flush();
      // The 1,001st path is "(other)", under whichever consumer asked for it.
      request(second, '/new/3');
      await recorder.flush();
      const detail = await reader.read(id);
      expect(detail.endpoints).toHaveLength(1_001);
      expect(detail.endpoints.find((e) => e.endpoint === '/p/0')?.requests).toBe(2);
      expect(detail.endpoints.find((e) => e.endpoint === '/new/2')?.requests).toBe(1);
      expect(detail.endpoints.find((e) => e.endpoint === '(other)')?.requests).toBe(1);
      const secondTotals = await reader.readConsumer(second, []);
      expect(secondTotals.endpoints.map((e) => e.endpoint).sort()).toEqual([
        '(other)',
        '/new/1',
        '/new/2',
        '/p/0',
        '/p/1',
      ]);
    });

    it('counts every fact of the requests in each bucket, for the key, its consumer and the fleet, stored or pending alike', async () => {
      const id = await key();
      const owner = consumer();
      const at = NOW - 10 * 60_000;
      const latencies: number[] = [];
      // 200 requests of 1 to 200 ms: 150 answered 200, 10 304, 20 404, 20 503; 5 refused by the
      // limiter, 3 as disabled and 2 as expired (a ms each).
      for (let i = 1; i <= 200; i++) {
        const status = i <= 150 ? 200 : i <= 160 ? 304 : i <= 180 ? 404 : 503;
        recorder.record(
          requestFacts(id, {
            consumerId: owner,
            status,
            outcome: status === 503 ? 'backendError' : undefined,
            durationMs: i,
            atMs: at,
          }),
        );
        latencies.push(i);
      }
      for (const [n, outcome] of [
        [5, 'rateLimited'],
        [3, 'disabled'],
        [2, 'expired'],
      ] as const) {
        for (let i = 0; i < n; i++) {
          recorder.record(
            requestFacts(id, { consumerId: owner, ...refused(outcome), durationMs: 1, atMs: at }),
          );
          latencies.push(1);
        }
      }
      recorder.record(
        requestFacts(id, {
          consumerId: owner,
          status: 502,
          outcome: 'backendUnreachable',
          durationMs: 5_000,
          atMs: at,
        }),
      );
      latencies.push(5_000);

      const expected = {
        requests: 211,
        successful: 160,
        failed: 51,
        rateLimited: 5,
        cost: 201,
        statusClasses: { '2xx': 150, '3xx': 10, '4xx': 30, '5xx': 21 },
        outcomes: {
          rateLimited: 5,
          creditsExhausted: 0,
          concurrencyLimited: 0,
          disabled: 3,
          expired: 2,
          routeNotAllowed: 0,
          originNotAllowed: 0,
          addressNotAllowed: 0,
          backendError: 20,
          backendUnreachable: 1,
        },
      };
      const check = (bucket: BucketView | undefined) => {
        expect(bucket).toMatchObject(expected);
        for (const [p, value] of Object.entries(bucket!.latencyMs)) {
          const exact = exactPercentile(latencies, Number(p.slice(1)));
          expect(Math.abs(value! - exact)).toBeLessThanOrEqual(0.05 * exact);
        }
      };
      const minute = async () =>
        (await history.forKey(id, 'minute', at - 60_000, at + 60_000)).buckets.find((b) => b.requests > 0);
      check(await minute());
      await recorder.flush();
      check(await minute());
      check(
        (await history.forConsumer(owner, [id], 'hour', NOW - 3_600_000, NOW)).buckets.find(
          (b) => b.requests > 0,
        ),
      );
      check(
        (
          await history.seriesForKey(id, 'endpoint', 'day', NOW - 12 * 3_600_000, NOW + 12 * 3_600_000, NOW)
        )[0]!.buckets[0],
      );
      // The fleet's bucket holds this key's and every other test's of that hour: at least these.
      const fleet = (await history.forFleet('hour', at - 3_600_000 + 600_000, at + 600_000)).buckets.find(
        (b) => b.start <= at && at - b.start < 3_600_000,
      )!;
      expect(fleet.statusClasses['5xx']).toBeGreaterThanOrEqual(21);
      expect(fleet.latencyMs.p99).toBeGreaterThan(0);
      expect((await history.forKey(id, 'minute', at - 120_000, at - 60_000)).buckets).toEqual([
        expect.objectContaining({ requests: 0, latencyMs: { p50: null, p95: null, p99: null } }),
      ]);
    });
  },
);
