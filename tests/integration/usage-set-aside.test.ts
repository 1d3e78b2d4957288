/**
 * One usage batch the database refuses never stops usage (contract section 32, decision record 0145):
 * it is set aside and reported (tollgate_usage_batches_set_aside, an error line naming it), every later
 * batch is applied, and once the cause is mended it is applied exactly once. The refusal here is the
 * operator's own (a CHECK constraint in Postgres, a trigger in SQLite, dropped to mend it), not a NUL:
 * any refusal of the data is set aside, while a database that cannot be reached is still waited for.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { openEmbedded, openPostgres, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageFlusher } from '../../src/usage/redis/flusher.js';
import { usageKeys } from '../../src/usage/redis/key-layout.js';
import { RedisUsageSink } from '../../src/usage/redis/sink.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageJournal } from '../../src/usage/journal.js';
import { SetAsideReport } from '../../src/usage/set-aside.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { freePort } from '../helpers/redis-server.js';
import { requestFacts } from '../helpers/request-facts.js';
import { REDIS_URL, createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';

/** The customer id the operator's rule refuses. */
const POISON = 'poison';

/** A process's logger and metrics, its error lines kept. */
function observed() {
  const lines: { level: number; msg: string; batchId?: string }[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
  const metrics = new Metrics();
  const setAside = async () =>
    (await metrics.registry.getSingleMetric('tollgate_usage_batches_set_aside')!.get()).values[0]?.value;
  const setAsideLines = () => lines.filter((l) => l.level === 50 && l.msg.includes('set aside'));
  return { logger, metrics, setAside, setAsideLines, lines };
}

/** Requests of `keyId` as the recorder counts them, `customerId` each. */
function record(recorder: UsageRecorder, keyId: string, requests: number, customerId?: string): void {
  for (let i = 0; i < requests; i++) recorder.record(requestFacts(keyId, { customerId }));
}

const totalOf = async (repository: UsageRepository, keyId: string) =>
  [...(await repository.read(keyId)).endpoints.values()].reduce((n, e) => n + e.requests, 0);

describe('Redis mode: two replicas share the flush', () => {
  let database: TestDatabase;
  let handle: DbHandle;
  let repository: UsageRepository;
  /** Every replica's Redis connection, closed after the suite. */
  const clients: Redis[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    handle = await database.open();
    await migrate(handle);
    repository = new UsageRepository(handle.db);
  });

  afterAll(async () => {
    for (const c of clients) await c.quit();
    await handle.close();
    await database.drop();
  });

  async function replica(prefix: string, repo: Pick<UsageRepository, 'applyBatch'> = repository) {
    const client = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false });
    clients.push(client);
    await client.connect();
    const seen = observed();
    const recorder = new UsageRecorder(new RedisUsageSink(client, prefix), seen.logger, seen.metrics);
    const flusher = new UsageFlusher(client, prefix, repo, seen.logger, seen.metrics);
    return { client, recorder, flusher, ...seen };
  }

  it('sets aside the refused batch, applies every later one, and applies it once when mended', async () => {
    const prefix = testKeyPrefix();
    const [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
    const layout = usageKeys(prefix);
    await sql`ALTER TABLE usage_customers ADD CONSTRAINT refuses_poison CHECK (customer_id <> ${sql.lit(POISON)})`.execute(
      handle.db,
    );

    record(a.recorder, 'key_poisoned', 3, POISON);
    record(a.recorder, 'key_poisoned', 2);
    await a.recorder.flush();
    await a.flusher.flush();
    const [setAside] = await a.client.smembers(layout.setAside);
    expect(setAside).toBeDefined();
    expect(await a.setAside()).toBe(1);
    expect(a.setAsideLines()).toEqual([expect.objectContaining({ batchId: setAside })]);
    expect(await totalOf(repository, 'key_poisoned')).toBe(0);

    // Later usage, pushed and flushed by the other replica, is applied; the set-aside batch is tried
    // again, refused again, and reported by nobody a second time.
    for (let second = 0; second < 3; second++) {
      record(b.recorder, 'key_clean', 4, 'customer-b');
      await b.recorder.flush();
      await b.flusher.flush();
      expect(await totalOf(repository, 'key_clean')).toBe(4 * (second + 1));
    }
    expect(await b.setAside()).toBe(1);
    expect([...a.setAsideLines(), ...b.setAsideLines()]).toHaveLength(1);
    expect(await a.client.smembers(layout.batches)).toEqual([setAside]);

    // Mended: both replicas flush at once, and the batch counts once.
    await sql`ALTER TABLE usage_customers DROP CONSTRAINT refuses_poison`.execute(handle.db);
    await Promise.all([a.flusher.flush(), b.flusher.flush(), a.flusher.flush()]);
    await b.flusher.flush();
    expect(await totalOf(repository, 'key_poisoned')).toBe(5);
    expect((await repository.read('key_poisoned')).customers.get(POISON)?.requests).toBe(3);
    expect(await a.client.smembers(layout.batches)).toEqual([]);
    expect(await a.client.smembers(layout.setAside)).toEqual([]);
    await a.flusher.flush();
    expect([await a.setAside(), await b.setAside()]).toEqual([0, 0]);
    expect([...a.lines, ...b.lines].filter((l) => l.msg.includes('set aside earlier is applied'))).toEqual([
      expect.objectContaining({ batchId: setAside }),
    ]);
  });

  it('sets nothing aside while Postgres cannot be reached: the batch waits, in order, as before', async () => {
    const prefix = testKeyPrefix();
    // A Postgres nobody listens on: the outage, for real.
    const nobody = await openPostgres(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
    const down = await replica(prefix, new UsageRepository(nobody.db));
    record(down.recorder, 'key_waiting', 2);
    await down.recorder.flush();
    await down.flusher.flush();
    await down.flusher.flush();
    await nobody.close();
    const layout = usageKeys(prefix);
    expect(await down.client.scard(layout.batches)).toBe(1);
    expect(await down.client.scard(layout.setAside)).toBe(0);
    expect(await down.setAside()).toBe(0);

    const up = await replica(prefix);
    await up.flusher.flush();
    expect(await totalOf(repository, 'key_waiting')).toBe(2);
  });
});

describe.each([
  {
    name: 'embedded (SQLite): a trigger refuses',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'set-aside-'));
      const handle = await openEmbedded(dir);
      return { handle, dispose: () => rmSync(dir, { recursive: true, force: true }) };
    },
    refuse: (db: DbHandle) =>
      sql`CREATE TRIGGER refuses_poison BEFORE INSERT ON usage_customers WHEN NEW.customer_id = ${sql.lit(POISON)}
          BEGIN SELECT RAISE(ABORT, 'no poison'); END`.execute(db.db),
    mend: (db: DbHandle) => sql`DROP TRIGGER refuses_poison`.execute(db.db),
  },
  {
    name: 'single-node Postgres: a CHECK constraint refuses',
    open: async () => {
      const database = await createTestDatabase();
      const handle = await database.open();
      return { handle, dispose: () => database.drop() };
    },
    refuse: (db: DbHandle) =>
      sql`ALTER TABLE usage_customers ADD CONSTRAINT refuses_poison CHECK (customer_id <> ${sql.lit(POISON)})`.execute(
        db.db,
      ),
    mend: (db: DbHandle) => sql`ALTER TABLE usage_customers DROP CONSTRAINT refuses_poison`.execute(db.db),
  },
])('$name', ({ open, refuse, mend }) => {
  let handle: DbHandle;
  let dispose: () => unknown;

  // A database each: a test leaves the refused rows in once it mends the rule.
  beforeEach(async () => {
    ({ handle, dispose } = await open());
    await migrate(handle);
  });

  afterEach(async () => {
    await handle.close();
    await dispose();
  });

  /** A recorder and its sink on the store, the store refusing the poison customer, and a key of its own. */
  async function refusingStore() {
    const repository = new UsageRepository(handle.db);
    const seen = observed();
    const sink = new DatabaseUsageSink(repository, undefined, new SetAsideReport(seen.logger, seen.metrics));
    const recorder = new UsageRecorder(sink, seen.logger, seen.metrics);
    await refuse(handle);
    return { repository, seen, sink, recorder, keyId: 'key_' + randomBytes(4).toString('hex') };
  }

  it('sets aside the refused batch, applies every later one, and applies it once when mended', async () => {
    const { repository, seen, sink, recorder, keyId } = await refusingStore();

    record(recorder, keyId, 3, POISON);
    await recorder.flush();
    expect(await seen.setAside()).toBe(1);
    const [line] = seen.setAsideLines();
    expect(line?.batchId).toEqual(expect.any(String));
    expect(sink.heldRequests()).toBe(3);

    for (let second = 0; second < 3; second++) {
      record(recorder, 'later_' + keyId, 2, 'customer-ok');
      await recorder.flush();
      expect(await totalOf(repository, 'later_' + keyId)).toBe(2 * (second + 1));
    }
    // Only the refused customer's rows wait: the key's requests are counted.
    expect(await totalOf(repository, keyId)).toBe(3);
    expect((await repository.read(keyId)).customers.has(POISON)).toBe(false);
    expect(seen.setAsideLines()).toHaveLength(1);
    // What is set aside is still shown as pending, not hidden.
    expect((await sink.pending(keyId)).map((p) => p.batchId)).toEqual([line!.batchId]);

    await mend(handle);
    await recorder.flush();
    await recorder.flush();
    expect(await totalOf(repository, keyId)).toBe(3);
    expect((await repository.read(keyId)).customers.get(POISON)?.requests).toBe(3);
    expect(sink.heldRequests()).toBe(0);
    expect(await seen.setAside()).toBe(0);
  });

  it('applies the usage handed over with a refused value, and the refused value once when mended', async () => {
    const { repository, seen, sink, recorder, keyId } = await refusingStore();

    // The refused requests fall over two hand-overs, the second with the key's later usage.
    record(recorder, keyId, 2, POISON);
    await recorder.flush();
    expect(await seen.setAside()).toBe(1);
    record(recorder, keyId, 1, POISON);
    record(recorder, keyId, 2, 'later');
    record(recorder, 'other_' + keyId, 1, 'later');
    await recorder.flush();
    const stored = await repository.read(keyId);
    expect(stored.customers.get('later')?.requests).toBe(2);
    expect(stored.customers.has(POISON)).toBe(false);
    expect(await totalOf(repository, keyId)).toBe(5);
    expect(await totalOf(repository, 'other_' + keyId)).toBe(1);
    expect(sink.heldRequests()).toBe(3);

    await mend(handle);
    await recorder.flush();
    const mended = await repository.read(keyId);
    expect(mended.customers.get(POISON)?.requests).toBe(3);
    expect(mended.customers.get('later')?.requests).toBe(2);
    expect(await totalOf(repository, keyId)).toBe(5);
    expect(sink.heldRequests()).toBe(0);
    expect(await seen.setAside()).toBe(0);
    await recorder.flush();
    expect((await repository.read(keyId)).customers.get(POISON)?.requests).toBe(3);
  });

  it('keeps the refused customer’s part in the journal at exit, and applies it once at the next start', async () => {
    const repository = new UsageRepository(handle.db);
    const dir = mkdtempSync(join(tmpdir(), 'set-aside-journal-'));
    const journal = () => {
      const j = new UsageJournal(join(dir, 'usage-journal'));
      j.reserve();
      return j;
    };
    const keyId = 'key_' + randomBytes(4).toString('hex');
    await refuse(handle);
    try {
      const before = observed();
      const recorder = new UsageRecorder(
        new DatabaseUsageSink(repository, journal(), new SetAsideReport(before.logger, before.metrics)),
        before.logger,
        before.metrics,
      );
      record(recorder, keyId, 3, POISON);
      record(recorder, keyId, 2, 'later');
      await recorder.stop();
      expect(before.lines.filter((l) => l.msg.includes('dropped'))).toEqual([]);
      expect((await repository.read(keyId)).customers.get('later')?.requests).toBe(2);

      await mend(handle);
      const after = observed();
      const sink = new DatabaseUsageSink(
        repository,
        journal(),
        new SetAsideReport(after.logger, after.metrics),
      );
      expect(sink.heldRequests()).toBe(3);
      await new UsageRecorder(sink, after.logger, after.metrics).flush();
      const stored = await repository.read(keyId);
      expect([stored.customers.get(POISON)?.requests, stored.customers.get('later')?.requests]).toEqual([
        3, 2,
      ]);
      expect(await totalOf(repository, keyId)).toBe(5);
      expect(new UsageJournal(join(dir, 'usage-journal')).take()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
