/** Usage totals in a real Postgres and in the embedded SQLite store: batches add up, once each, capped per key. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { hashSecret } from '../../src/keys/secret.js';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { OTHER_ENDPOINT, type UsageBatch } from '../../src/usage/usage.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

function batchOf(
  keyId: string,
  endpoints: Record<string, [number, number, number]>,
  customers: Record<string, number> = {},
): UsageBatch {
  return new Map([
    [
      keyId,
      {
        endpoints: new Map(
          Object.entries(endpoints).map(([e, [ok, failed, ms]]) => [
            e,
            { requests: ok + failed, successful: ok, failed, totalDurationMs: ms, cost: 0 },
          ]),
        ),
        customers: new Map(
          Object.entries(customers).map(([c, n]) => [c, { requests: n, successful: n, failed: 0 }]),
        ),
        minutes: new Map(),
        days: new Map(),
        consumers: new Map(),
      },
    ],
  ]);
}

/**
 * One name more than one statement of each database takes parameters (Postgres 65,535, SQLite 32,766):
 * a batch naming this many keys or customers works only if the repository splits its statements.
 */
const PAST_ONE_STATEMENT = { postgres: 65_536, embedded: 32_767 } as const;

describe.each(['postgres', 'embedded'] as const)('usage repository on %s', (kind) => {
  const many = PAST_ONE_STATEMENT[kind];
  let database: TestDatabase | undefined;
  let handle: DbHandle;
  let usage: UsageRepository;
  let keys: KeyRepository;
  let n = 0;

  async function newKey(): Promise<string> {
    const id = `key_usage_${kind}_${n++}`;
    await keys.insert({
      id,
      name: id,
      secretHash: hashSecret(id),
      secretCiphertext: Buffer.alloc(40),
      createdAt: new Date(),
    });
    return id;
  }

  beforeAll(async () => {
    if (kind === 'postgres') {
      database = await createTestDatabase({ migrated: true });
      handle = await database.open();
    } else {
      handle = await openEmbedded(mkdtempSync(join(tmpdir(), 'tollgate-usage-')));
    }
    await migrate(handle);
    usage = new UsageRepository(handle.db);
    keys = new KeyRepository(handle.db);
  });

  afterAll(async () => {
    await handle?.close();
    await database?.drop();
  });

  it('adds batches up and reports totals, averages and customers, most requests first', async () => {
    const keyId = await newKey();
    await usage.applyBatch(undefined, batchOf(keyId, { '/a': [2, 1, 30], '/b': [1, 0, 50] }, { acme: 2 }));
    await usage.applyBatch(undefined, batchOf(keyId, { '/b': [2, 1, 10] }, { acme: 1, globex: 4 }));
    const view = await new UsageReader(usage, []).read(keyId);
    expect(view).toEqual({
      totalRequests: 7,
      successfulRequests: 5,
      failedRequests: 2,
      cost: 0,
      unsettled: 0,
      endpoints: [
        {
          endpoint: '/b',
          requests: 4,
          successful: 3,
          failed: 1,
          averageResponseTimeMs: 15,
          cost: 0,
          unsettled: 0,
        },
        {
          endpoint: '/a',
          requests: 3,
          successful: 2,
          failed: 1,
          averageResponseTimeMs: 10,
          cost: 0,
          unsettled: 0,
        },
      ],
      usageByCustomer: [
        { customerId: 'globex', requests: 4, successful: 4, failed: 0 },
        { customerId: 'acme', requests: 3, successful: 3, failed: 0 },
      ],
    });
  });

  it('applies a batch id once, however often it is retried', async () => {
    const keyId = await newKey();
    const batch = batchOf(keyId, { '/once': [3, 0, 3] });
    expect(await usage.applyBatch('batch-once-' + kind, batch)).toBe(true);
    expect(await usage.applyBatch('batch-once-' + kind, batch)).toBe(false);
    expect((await usage.read(keyId)).endpoints.get('/once')?.requests).toBe(3);
  });

  it('keeps the usage of a key deleted before its batch arrives (made while it existed), and the usage it had', async () => {
    const gone = await newKey();
    const kept = await newKey();
    await usage.applyBatch(undefined, batchOf(gone, { '/x': [2, 0, 1] }));
    await keys.delete(gone);
    const batch = new Map([...batchOf(gone, { '/x': [1, 0, 1] }), ...batchOf(kept, { '/y': [1, 0, 1] })]);
    await usage.applyBatch(undefined, batch);
    expect((await usage.read(gone)).endpoints.get('/x')?.requests).toBe(3);
    expect((await usage.read(kept)).endpoints.get('/y')?.requests).toBe(1);
  });

  it('keeps at most 1000 paths per key and counts the rest under "(other)"', async () => {
    const keyId = await newKey();
    const first = Object.fromEntries(
      Array.from({ length: 998 }, (_, i) => [`/p/${i}`, [1, 0, 1] as [number, number, number]]),
    );
    await usage.applyBatch(undefined, batchOf(keyId, first));
    await usage.applyBatch(
      undefined,
      batchOf(keyId, {
        '/p/0': [1, 0, 1],
        '/new/1': [1, 0, 1],
        '/new/2': [1, 0, 1],
        '/new/3': [2, 0, 2],
        '/new/4': [1, 1, 2],
      }),
    );
    const stored = await usage.read(keyId);
    expect(stored.endpoints.size).toBe(1001);
    expect(stored.endpoints.get('/p/0')?.requests).toBe(2);
    expect(stored.endpoints.has('/new/2')).toBe(true);
    expect(stored.endpoints.get(OTHER_ENDPOINT)).toEqual({
      requests: 4,
      successful: 3,
      failed: 1,
      totalDurationMs: 4,
      cost: 0,
    });
  });

  it('keeps at most 10,000 customers per key, the rest under "(other)", across batches, sums intact', async () => {
    const keyId = await newKey();
    const usage = new UsageRepository(handle.db);
    const customers = (from: number, to: number) =>
      Object.fromEntries(Array.from({ length: to - from }, (_, i) => [`c${from + i}`, 1]));
    await usage.applyBatch(undefined, batchOf(keyId, { '/c': [9_990, 0, 1] }, customers(0, 9_990)));
    // 20 repeat customers and 60 new ones: 10 of the new fit, 50 go to "(other)".
    await usage.applyBatch(
      undefined,
      batchOf(keyId, { '/c': [80, 0, 1] }, { ...customers(0, 20), ...customers(9_990, 10_050) }),
    );
    const stored = await usage.read(keyId);
    expect(stored.customers.size).toBe(10_001);
    expect(stored.customers.get('c0')?.requests).toBe(2);
    expect(stored.customers.get('c9999')?.requests).toBe(1);
    expect(stored.customers.has('c10000')).toBe(false);
    expect(stored.customers.get('(other)')?.requests).toBe(50);
    expect([...stored.customers.values()].reduce((n, c) => n + c.requests, 0)).toBe(10_070);
    // The usage of a key at both caps stays small enough to answer: well under 2 MB as JSON.
    expect(JSON.stringify([...stored.customers]).length).toBeLessThan(2_000_000);
  });

  /** `n` keys at once, as many statements of a thousand rows as that takes. */
  async function manyKeys(n: number): Promise<string[]> {
    const ids = Array.from({ length: n }, (_, i) => `key_many_${kind}_${n}_${i}`);
    for (let i = 0; i < n; i += 1000) {
      const now = new Date();
      await handle.db
        .insertInto('api_keys')
        .values(
          ids.slice(i, i + 1000).map((id) => ({
            id,
            name: id,
            secret_hash: hashSecret(id),
            secret_ciphertext: Buffer.alloc(40),
            created_at: now,
            last_updated: now,
          })),
        )
        .execute();
    }
    return ids;
  }

  it('applies a batch of more keys than one statement takes parameters: every key counted, deleted ones too', async () => {
    // 5,000 live keys (each of its statements in several slices) and the rest deleted meanwhile, whose
    // usage stays (it was made while they existed): the batch names them all, as one held through a
    // long outage does.
    const live = await manyKeys(5_000);
    const ids = [...live, ...Array.from({ length: many - 5_000 }, (_, i) => `key_gone_${kind}_${i}`)];
    const batch: UsageBatch = new Map(ids.map((id) => [id, batchOf(id, { '/many': [1, 0, 2] }).get(id)!]));
    expect(await usage.applyBatch(`many-keys-${kind}`, batch)).toBe(true);
    const counted = await sql<{ keys: number; requests: number }>`
      select cast(count(*) as integer) as keys, cast(sum(requests) as integer) as requests from usage_endpoints where endpoint = '/many'`.execute(
      handle.db,
    );
    expect(counted.rows[0]).toEqual({ keys: many, requests: many });
    expect((await usage.read(live.at(-1)!)).endpoints.get('/many')).toEqual({
      requests: 1,
      successful: 1,
      failed: 0,
      totalDurationMs: 2,
      cost: 0,
    });
    const buckets = await sql<{
      n: number;
    }>`select cast(count(*) as integer) as n from usage_buckets where granularity = 'month' and key_id like ${`key_many_${kind}_%`}`.execute(
      handle.db,
    );
    expect(buckets.rows[0]!.n).toBe(5_000);
    const gone = await sql<{
      n: number;
    }>`select cast(count(*) as integer) as n from usage_buckets where granularity = 'month' and key_id like ${`key_gone_${kind}_%`}`.execute(
      handle.db,
    );
    expect(gone.rows[0]!.n).toBe(many - 5_000);
  }, 300_000);

  it('applies a key with more new customers in one batch than one statement takes parameters: 10,000 kept, the rest under "(other)", sums intact', async () => {
    const keyId = await newKey();
    const customers = Object.fromEntries(Array.from({ length: many }, (_, i) => [`flood-${i}`, 1]));
    await usage.applyBatch(undefined, batchOf(keyId, { '/c': [1_000, 0, 1] }, { held: 1 }));
    await usage.applyBatch(undefined, batchOf(keyId, { '/c': [many + 1, 0, 1] }, { held: 1, ...customers }));
    const stored = await usage.read(keyId);
    expect(stored.customers.size).toBe(10_001);
    expect(stored.customers.get('held')?.requests).toBe(2);
    expect(stored.customers.get('(other)')?.requests).toBe(many - 9_999);
    expect([...stored.customers.values()].reduce((n, c) => n + c.requests, 0)).toBe(many + 2);
  }, 300_000);

  it('counts a customer whose id holds a lone surrogate (a token subject may) under U+FFFD in its place', async () => {
    const keyId = await newKey();
    await usage.applyBatch(undefined, batchOf(keyId, { '/s': [2, 0, 4] }, { 'acme\ud800': 2 }));
    const stored = await usage.read(keyId);
    expect([...stored.customers]).toEqual([['acme\ufffd', { requests: 2, successful: 2, failed: 0 }]]);
    const days = await sql<{ customer_id: string; requests: number }>`
      select customer_id, cast(requests as integer) as requests from usage_customer_buckets
      where key_id = ${keyId} and granularity = 'day'`.execute(handle.db);
    expect(days.rows).toEqual([{ customer_id: 'acme\ufffd', requests: 2 }]);
  });

  it('prunes batch ids older than a day', async () => {
    const keyId = await newKey();
    await sql`insert into usage_batches (batch_id, applied_at) values ('ancient-' || ${kind}, ${new Date(Date.now() - 2 * 86_400_000)})`.execute(
      handle.db,
    );
    await new UsageRepository(handle.db).applyBatch('fresh-' + kind, batchOf(keyId, { '/z': [1, 0, 1] }));
    const ids = await handle.db.selectFrom('usage_batches').select('batch_id').execute();
    expect(ids.map((r) => r.batch_id)).toContain('fresh-' + kind);
    expect(ids.map((r) => r.batch_id)).not.toContain('ancient-' + kind);
  });
});
