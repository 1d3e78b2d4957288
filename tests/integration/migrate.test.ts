/**
 * Migrations run each file whole, inside one transaction under the advisory lock: on PGlite (exec) and
 * on Postgres (simple query protocol), a plpgsql `$$` body with `;` at line ends included.
 */
import { mkdtempSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { openEmbedded, openPostgres, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/migrations');

const counter = async (handle: DbHandle) => (await sql<{ n: number }>`select n from counter`.execute(handle.db)).rows[0]?.n;

describe.each(['embedded', 'postgres'] as const)('migrate on %s', (kind) => {
  let handle: DbHandle;
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  const open = async () => (database ? openPostgres(database.url) : openEmbedded(dataDir!));

  beforeEach(async () => {
    if (kind === 'postgres') database = await createTestDatabase();
    else dataDir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-'));
    handle = await open();
  });

  afterEach(async () => {
    await handle.close();
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs a file with a $$ function body whole, and each file once', async () => {
    expect(await migrate(handle, FIXTURES)).toEqual(['001_counter.sql', '002_bump.sql']);
    expect(await counter(handle)).toBe(5);
    expect(await migrate(handle, FIXTURES)).toEqual([]);
    expect(await counter(handle)).toBe(5);
  });

  it('applies nothing of a run whose later file fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrations-'));
    try {
      cpSync(FIXTURES, dir, { recursive: true });
      writeFileSync(join(dir, '003_broken.sql'), 'SELECT bump(10);\nSELECT no_such_function();\n');
      await expect(migrate(handle, dir)).rejects.toThrow(/no_such_function/);
      const tables = await sql<{ n: number }>`select count(*)::int as n from pg_tables where tablename = 'counter'`.execute(handle.db);
      expect(tables.rows[0]?.n).toBe(0);
      // Fixed, the same files apply in full.
      writeFileSync(join(dir, '003_broken.sql'), 'SELECT bump(10);\n');
      expect(await migrate(handle, dir)).toEqual(['001_counter.sql', '002_bump.sql', '003_broken.sql']);
      expect(await counter(handle)).toBe(15);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  if (kind === 'postgres') {
    it('applies each file once when replicas migrate together', async () => {
      const others = await Promise.all([open(), open(), open()]);
      try {
        const ran = await Promise.all([handle, ...others].map((h) => migrate(h, FIXTURES)));
        expect(ran.flat().sort()).toEqual(['001_counter.sql', '002_bump.sql']);
        expect(await counter(handle)).toBe(5);
      } finally {
        await Promise.all(others.map((h) => h.close()));
      }
    });
  }
});
