/**
 * Upgrading a database that counted usage before the buckets existed (sql/012): on a real Postgres, and
 * a PGlite-era embedded DATA_DIR upgraded into the SQLite store (upgrade-data-dir). The usage missing from a
 * key's buckets is filed in the buckets of the upgrade that also hold the key's creation, where its
 * time is certain, and nowhere else.
 */
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { hashSecret } from '../../src/keys/secret.js';
import { openEmbedded, PGLITE_FOLDER, type Db, type DbHandle } from '../../src/store/db.js';
import { migrate, SQL_DIR } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { upgradeFromPglite } from '../../src/store/upgrade-from-pglite.js';
import { bucketAt, GRANULARITIES, type Granularity } from '../../src/usage/granularity.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

/** A database at the schema before this change, and how the upgrade reaches it. */
interface Upgradable {
  /** Where the previous version wrote (Postgres' SQL: a server, or PGlite). */
  readonly before: DbHandle;
  /** Upgrades as a start of this version does; resolves the store it then reads. */
  upgrade(): Promise<DbHandle>;
  dispose(): Promise<void>;
}

const KINDS: Record<'postgres' | 'embedded', () => Promise<Upgradable>> = {
  async postgres() {
    const database: TestDatabase = await createTestDatabase();
    const handle = await database.open();
    return {
      before: handle,
      async upgrade() {
        // The backfill runs right after the migration before it; later migrations follow it.
        expect((await migrate(handle)).slice(0, 2)).toEqual([
          '014_usage_series_counts.sql',
          '015_usage_buckets_backfill.sql',
        ]);
        return handle;
      },
      async dispose() {
        await handle.close();
        await database.drop();
      },
    };
  },
  async embedded() {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-backfill-'));
    const pglite = await openPglite(join(dataDir, PGLITE_FOLDER));
    let store: DbHandle | undefined;
    return {
      before: pglite,
      async upgrade() {
        await pglite.close();
        expect(await upgradeFromPglite(dataDir)).toBeDefined();
        return (store = await openEmbedded(dataDir));
      },
      async dispose() {
        await store?.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  },
};

describe.each(Object.keys(KINDS) as (keyof typeof KINDS)[])('the usage backfill on %s storage', (kind) => {
  let upgradable: Upgradable;
  let previousSql: string;

  beforeAll(async () => {
    upgradable = await KINDS[kind]();
    // The schema as a deployment had it just before this change.
    previousSql = mkdtempSync(join(tmpdir(), 'tollgate-sql-'));
    for (const file of readdirSync(SQL_DIR).filter((f) => /^\d+_.+\.sql$/.test(f) && f < '014'))
      cpSync(join(SQL_DIR, file), join(previousSql, file));
    await migrate(upgradable.before, previousSql);
  }, 120_000);

  afterAll(async () => {
    await upgradable.dispose();
    rmSync(previousSql, { recursive: true, force: true });
  });

  it('fills the buckets of the upgrade where the key was created, and leaves older keys short by what they did before', async () => {
    const db = upgradable.before.db;
    const now = Date.now();
    const keys = { fresh: now, thisMonth: bucketAt('month', now).start, old: now - 40 * 86_400_000 };
    for (const [id, created] of Object.entries(keys)) {
      await db
        .insertInto('api_keys')
        .values({
          id,
          name: id,
          secret_hash: hashSecret(id),
          secret_ciphertext: Buffer.alloc(40),
          created_at: new Date(created),
          last_updated: new Date(created),
        })
        .execute();
      // Before the upgrade: 5 requests on /a (one failed) by acme and 2 on /b (no customer) ...
      await db
        .insertInto('usage_endpoints')
        .values([
          { key_id: id, endpoint: '/a', requests: 5, successful: 4, failed: 1, total_duration_ms: 50 },
          { key_id: id, endpoint: '/b', requests: 2, successful: 2, failed: 0, total_duration_ms: 4 },
        ])
        .execute();
      await db
        .insertInto('usage_customers')
        .values({ key_id: id, customer_id: 'acme', requests: 5, successful: 4, failed: 1 })
        .execute();
    }
    // ... and the old key's 3 more on /a by acme since sql/012, in its buckets already.
    for (const granularity of GRANULARITIES) {
      const start = new Date(bucketAt(granularity, now - 60_000).start);
      await db
        .insertInto('usage_buckets')
        .values({
          key_id: 'old',
          granularity,
          start,
          requests: 3,
          successful: 3,
          failed: 0,
          rate_limited: 0,
          total_duration_ms: 6,
        })
        .execute();
      if (granularity === 'day' || granularity === 'month') {
        // The series tables as sql/012 made them: no rate_limited, no response time for customers.
        await sql`insert into usage_endpoint_buckets (key_id, granularity, start, endpoint, requests, successful, failed, total_duration_ms) values ('old', ${granularity}, ${start}, '/a', 3, 3, 0, 6)`.execute(
          db,
        );
        await sql`insert into usage_customer_buckets (key_id, granularity, start, customer_id, requests, successful, failed) values ('old', ${granularity}, ${start}, 'acme', 3, 3, 0)`.execute(
          db,
        );
      }
    }
    await sql`update usage_endpoints set requests = requests + 3, successful = successful + 3, total_duration_ms = total_duration_ms + 6 where key_id = 'old' and endpoint = '/a'`.execute(
      db,
    );
    await sql`update usage_customers set requests = requests + 3, successful = successful + 3 where key_id = 'old'`.execute(
      db,
    );

    const upgradeStarted = Date.now();
    const store = (await upgradable.upgrade()).db;
    const upgradeEnded = Date.now();

    const buckets = async (
      from: Db,
      table: 'usage_buckets' | 'usage_endpoint_buckets' | 'usage_customer_buckets',
      keyId: string,
      granularity: Granularity,
    ) =>
      from
        .selectFrom(table)
        .select(['start', 'requests', 'successful', 'failed', 'total_duration_ms'])
        .where('key_id', '=', keyId)
        .where('granularity', '=', granularity)
        .execute();
    for (const granularity of GRANULARITIES) {
      // The upgrade ran at some instant between these two: where both fall in one bucket, it is that one.
      const upgradeBucket = bucketAt(granularity, upgradeStarted).start;
      if (bucketAt(granularity, upgradeEnded).start !== upgradeBucket) continue;
      for (const [id, created] of Object.entries(keys)) {
        const rows = await buckets(store, 'usage_buckets', id, granularity);
        const certain = bucketAt(granularity, created).start === upgradeBucket;
        if (id === 'old') {
          // Its time before sql/012 is not known: it stays in the totals only.
          expect(rows.map((r) => Number(r.requests))).toEqual([3]);
        } else if (certain) {
          expect(
            rows.map((r) => [
              r.start.getTime(),
              Number(r.requests),
              Number(r.successful),
              Number(r.failed),
              Number(r.total_duration_ms),
            ]),
          ).toEqual([[upgradeBucket, 7, 6, 1, 54]]);
        } else {
          expect(rows).toEqual([]);
        }
        if (granularity === 'day' || granularity === 'month') {
          const endpoints = await buckets(store, 'usage_endpoint_buckets', id, granularity);
          const customers = await buckets(store, 'usage_customer_buckets', id, granularity);
          if (id === 'old') {
            expect(endpoints.map((r) => Number(r.requests))).toEqual([3]);
            expect(customers.map((r) => Number(r.requests))).toEqual([3]);
          } else {
            expect(endpoints.map((r) => Number(r.requests)).sort()).toEqual(certain ? [2, 5] : []);
            expect(customers.map((r) => [Number(r.requests), Number(r.failed)])).toEqual(
              certain ? [[5, 1]] : [],
            );
          }
        }
      }
    }
    // The month of a key created this month is complete: its buckets add up to its totals.
    expect(
      (await buckets(store, 'usage_buckets', 'thisMonth', 'month')).map((r) => Number(r.requests)),
    ).toEqual([7]);
  });
});
