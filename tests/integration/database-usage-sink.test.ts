/**
 * The single-node sink on a real Postgres, through an outage: batches handed over while the database
 * refuses merge into one (they were never sent, so none can have been applied), while a batch that
 * was sent keeps its id and is applied once, however its answers were lost.
 */
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import type { DbHandle } from '../../src/store/db.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { requestsIn, type UsageBatch } from '../../src/usage/usage.js';
import { refused, requestFacts } from '../helpers/request-facts.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

const logger = createLogger('silent');
let database: TestDatabase;
let handle: DbHandle;
let repository: UsageRepository;
let keys: KeyRepository;

beforeAll(async () => {
  database = await createTestDatabase();
  handle = await database.open();
  await migrate(handle);
  repository = new UsageRepository(handle.db);
  keys = new KeyRepository(handle.db);
});

afterAll(async () => {
  await handle.close();
  await database.drop();
});

async function newKey(): Promise<string> {
  const id = 'key_sink_' + randomBytes(6).toString('hex');
  await keys.insert({
    id,
    name: id,
    secretHash: randomBytes(32),
    secretCiphertext: randomBytes(40),
    createdAt: new Date(),
  });
  return id;
}

/**
 * The repository behind a switch: `down` refuses before Postgres sees anything; `answerLost` lets
 * Postgres apply, then loses the answer (a timeout during COMMIT). Every call is noted.
 */
function flaky() {
  const state = { down: false, answerLost: false, calls: [] as { batchId: string; requests: number }[] };
  const applyBatch = async (batchId: string | undefined, batch: UsageBatch) => {
    state.calls.push({ batchId: batchId!, requests: requestsIn(batch) });
    if (state.down) throw new Error('connect ECONNREFUSED');
    const applied = await repository.applyBatch(batchId, batch);
    if (state.answerLost) throw new Error('Query read timeout');
    return applied;
  };
  return { state, applyBatch };
}

it('merges the batches handed over during an outage into one, and keeps the id of the one that was sent', async () => {
  const keyId = await newKey();
  const store = flaky();
  const sink = new DatabaseUsageSink(store);
  const recorder = new UsageRecorder(sink, logger, new Metrics());
  const reader = new UsageReader(repository, [sink, recorder]);

  store.state.down = true;
  for (let second = 0; second < 30; second++) {
    for (let i = 0; i <= second % 4; i++) {
      // Every other second the key belongs to a consumer; a limiter's 429 every fourth request charges nothing.
      const consumerId = second % 2 === 0 ? 'con_even' : null;
      recorder.record(
        requestFacts(keyId, {
          endpoint: `/v1/${second % 3}`,
          customerId: `customer-${second}`,
          consumerId,
          ...(i === 3 ? refused('rateLimited') : {}),
        }),
      );
    }
    await recorder.flush();
    // Held usage shows once in the detail, however the held batches merge.
    expect((await reader.read(keyId)).totalRequests).toBe(recordedUpTo(second));
  }
  // Only the first batch was ever sent: every retry is the same write under the same id.
  expect(new Set(store.state.calls.map((c) => c.batchId)).size).toBe(1);
  expect(sink.heldRequests()).toBe(recordedUpTo(29));

  store.state.down = false;
  store.state.calls.length = 0;
  await recorder.flush();
  // The sent batch under its id, then everything since as one batch.
  expect(store.state.calls.map((c) => c.requests)).toEqual([1, recordedUpTo(29) - 1]);
  const stored = await repository.read(keyId);
  expect([...stored.endpoints.values()].reduce((n, e) => n + e.requests, 0)).toBe(recordedUpTo(29));
  // Every fact once: 30 seconds of 1 to 4 requests, a 429 in the 7 seconds of four.
  expect([...stored.endpoints.values()].reduce((n, e) => n + e.cost, 0)).toBe(recordedUpTo(29) - 7);
  expect(stored.customers.size).toBe(30);
  const filed = (await repository.readBusiest({ consumerId: 'con_even' })).usage;
  expect([...filed.endpoints.values()].reduce((n, e) => n + e.requests, 0)).toBe(
    Array.from({ length: 15 }, (_, k) => ((2 * k) % 4) + 1).reduce((a, b) => a + b, 0),
  );
  expect([...filed.customers.keys()].every((c) => Number(c.split('-')[1]) % 2 === 0)).toBe(true);
  expect(sink.heldRequests()).toBe(0);
});

it('applies a batch whose commit answer was lost once, however often it is sent again', async () => {
  const keyId = await newKey();
  const store = flaky();
  const sink = new DatabaseUsageSink(store);
  const recorder = new UsageRecorder(sink, logger, new Metrics());
  store.state.answerLost = true;
  recorder.record(requestFacts(keyId, { endpoint: '/v1/once' }));
  await recorder.flush();
  // Handed over again meanwhile: it must not merge into the batch Postgres may already have.
  recorder.record(requestFacts(keyId, { endpoint: '/v1/once' }));
  await recorder.flush();
  store.state.answerLost = false;
  await recorder.flush();
  const ids = store.state.calls.map((c) => c.batchId);
  expect(new Set(ids).size).toBe(2);
  expect(ids.filter((id) => id === ids[0]).length).toBe(3);
  expect((await repository.read(keyId)).endpoints.get('/v1/once')?.requests).toBe(2);
});

/** Requests recorded by the loop above up to and including `second`. */
function recordedUpTo(second: number): number {
  let n = 0;
  for (let s = 0; s <= second; s++) n += (s % 4) + 1;
  return n;
}
