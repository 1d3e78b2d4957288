/**
 * The key detail of a key at both usage caps, with the longest names a client can send (and the
 * characters JSON escapes), on the embedded SQLite store and a real Postgres: every path, the 1,000 customers
 * with the most requests and the rest summed, under 2 MB, sums intact.
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
import { MAX_CUSTOMER_ID_LENGTH } from '../../src/plans/customer-id.js';
import { MAX_ENDPOINT_LENGTH } from '../../src/usage/usage.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { requestFacts } from '../helpers/request-facts.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const logger = createLogger('silent');

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'the key detail at both caps on %s storage',
  (kind) => {
    let storage: Storage;
    let app: Express;
    let recorder: UsageRecorder;

    beforeAll(async () => {
      storage = await STORAGES[kind]();
      await migrate(storage.handle);
      const repository = new UsageRepository(storage.handle.db);
      recorder = new UsageRecorder(new DatabaseUsageSink(repository), logger, new Metrics());
      app = createManagementApp(
        managementDeps(storage.handle.db, {
          usage: new UsageReader(repository, [recorder]),
          rootToken: ROOT_TOKEN,
          logger,
        }),
      );
    }, 120_000);

    afterAll(() => storage.dispose());

    it('lists every path and the 1,000 busiest customers, sums the rest, and stays under 2 MB with the longest names', async () => {
      const created = await request(app)
        .post('/consumer-api-key/create')
        .set('Authorization', `Bearer ${ROOT_TOKEN}`)
        .send({ name: 'at-the-caps' });
      const id = created.body.id as string;
      // Quotes and backslashes take two bytes each in JSON: the largest a name can be.
      const path = (i: number) => `/${i}/`.padEnd(MAX_ENDPOINT_LENGTH + 10, '"\\');
      const customer = (i: number) => `${i}:`.padEnd(MAX_CUSTOMER_ID_LENGTH + 10, '"\\');
      for (let i = 0; i < 10_050; i++)
        recorder.record(
          requestFacts(id, {
            endpoint: path(i % 1_050),
            customerId: customer(i),
            status: i % 7 !== 0 ? 200 : 500,
            durationMs: 3,
          }),
        );
      // The busiest customers: a few more requests each.
      for (let i = 0; i < 1_000; i++)
        recorder.record(requestFacts(id, { endpoint: path(0), customerId: customer(i), durationMs: 3 }));
      await recorder.flush();
      // Requests still on their way count too: one of a listed customer, one of a customer not listed.
      recorder.record(requestFacts(id, { endpoint: path(0), customerId: customer(5), durationMs: 3 }));
      recorder.record(requestFacts(id, { endpoint: path(0), customerId: customer(20_000), durationMs: 3 }));

      const res = await request(app)
        .get(`/consumer-api-key/${id}`)
        .set('Authorization', `Bearer ${ROOT_TOKEN}`);
      expect(res.status).toBe(200);
      expect(checker.problems('get', '/consumer-api-key/{consumerApiKeyId}', res)).toEqual([]);
      expect(Buffer.byteLength(res.text)).toBeLessThan(2 * 1024 * 1024);
      const usage = res.body.usage;
      expect(usage.totalRequests).toBe(11_052);
      expect(usage.endpoints).toHaveLength(1_001);
      expect(
        usage.endpoints.every((e: { endpoint: string }) => e.endpoint.length <= MAX_ENDPOINT_LENGTH),
      ).toBe(true);
      // Most requests first: "(other)" (the 50 customers beyond 10,000), then the busiest customers; the
      // 1,000th of those and the 9,000 with one request each are summed, with the pending request of a
      // customer not listed (which the flush will count under "(other)").
      expect(usage.usageByCustomer).toHaveLength(1_000);
      expect(usage.usageByCustomer[0]).toMatchObject({ customerId: '(other)', requests: 50 });
      expect(usage.usageByCustomer[1]).toMatchObject({
        customerId: customer(5).slice(0, MAX_CUSTOMER_ID_LENGTH),
        requests: 3,
      });
      expect(usage.usageByCustomer.slice(2).every((c: { requests: number }) => c.requests === 2)).toBe(true);
      expect(usage.usageByCustomerNotListed).toEqual({
        customers: 9_001,
        requests: 9_003,
        successful: expect.any(Number),
        failed: expect.any(Number),
      });
      const listed = usage.usageByCustomer.reduce((n: number, c: { requests: number }) => n + c.requests, 0);
      expect(listed + usage.usageByCustomerNotListed.requests).toBe(11_052);
    }, 120_000);
  },
);
