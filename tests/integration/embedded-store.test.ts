/**
 * The embedded store's driver (src/store/sqlite-database.ts) as the rest of Tollgate reads it: SQLite's
 * errors arrive with the SQLSTATEs Postgres would give. A full database is 53100 even from inside a
 * transaction SQLite ended by itself, so management answers 503 storage_unavailable and readiness
 * reports the database until a write fits again; a reference to a missing plan is 23503.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { hashSecret } from '../../src/keys/secret.js';
import { isForeignKeyViolation, isStorageRefusingWrites } from '../../src/management/db-errors.js';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { StorageHealth } from '../../src/store/storage-health.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-embedded-store-'));
let handle: DbHandle;
let n = 0;
const newKey = (keys: KeyRepository, rateLimitId: string | null = null) => {
  const id = `key_store_${n++}`;
  return keys.insert({
    id,
    name: 'x'.repeat(200),
    secretHash: hashSecret(id),
    secretCiphertext: Buffer.alloc(40),
    rateLimitId,
    createdAt: new Date(),
  });
};

beforeAll(async () => {
  handle = await openEmbedded(dataDir);
  await migrate(handle);
});

afterAll(async () => {
  await handle.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('reports a full database as SQLSTATE 53100 from a transaction SQLite ended itself, and recovers once writes fit', async () => {
  const keys = new KeyRepository(handle.db);
  const health = new StorageHealth(handle.db);
  const pages = (await sql<{ page_count: number }>`select * from pragma_page_count`.execute(handle.db))
    .rows[0]!.page_count;
  // The file may not grow: what a full disk does to SQLite.
  await sql`pragma max_page_count = ${sql.raw(String(pages))}`.execute(handle.db);

  const failure: unknown = await handle.db
    .transaction()
    .execute(async (trx) => {
      for (let i = 0; i < 50; i++) await newKey(new KeyRepository(trx));
    })
    .catch((err: unknown) => err);
  expect(failure).toMatchObject({ code: '53100', message: 'database or disk is full' });
  expect(isStorageRefusingWrites(failure)).toBe(true);
  health.refused((failure as Error).message);
  await expect(health.check()).rejects.toThrow('the database refuses writes: database or disk is full');

  await sql`pragma max_page_count = 1073741823`.execute(handle.db);
  await health.check();
  await newKey(keys);
  expect(await keys.count({}, 100)).toBe(1);
});

it('reports a key bound to a plan that does not exist as SQLSTATE 23503', async () => {
  const failure: unknown = await newKey(new KeyRepository(handle.db), 'no-such-plan').catch(
    (err: unknown) => err,
  );
  expect(failure).toMatchObject({ code: '23503' });
  expect(isForeignKeyViolation(failure)).toBe(true);
});
