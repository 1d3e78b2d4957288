/**
 * The embedded SQLite store's schema (sql/sqlite/) means what Postgres' (sql/) means: the same tables,
 * the same columns, the same nullability, defaults where Postgres has them, and the same named
 * indexes. A Postgres migration that lands without its SQLite counterpart fails here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

interface Column {
  readonly table: string;
  readonly column: string;
  readonly notNull: boolean;
  readonly hasDefault: boolean;
}

async function postgresSchema(handle: DbHandle): Promise<{ columns: Column[]; indexes: string[] }> {
  const columns = await sql<{ table: string; column: string; not_null: boolean; has_default: boolean }>`
    select table_name as table, column_name as column, is_nullable = 'NO' as not_null, column_default is not null as has_default
    from information_schema.columns where table_schema = 'public'`.execute(handle.db);
  const indexes = await sql<{ name: string }>`
    select i.indexname as name from pg_indexes i
    where i.schemaname = 'public' and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`.execute(
    handle.db,
  );
  return {
    columns: columns.rows.map((r) => ({
      table: r.table,
      column: r.column,
      notNull: r.not_null,
      hasDefault: r.has_default,
    })),
    indexes: indexes.rows.map((r) => r.name),
  };
}

async function sqliteSchema(handle: DbHandle): Promise<{ columns: Column[]; indexes: string[] }> {
  const columns = await sql<{
    table: string;
    column: string;
    not_null: number;
    dflt_value: string | null;
    pk: number;
  }>`
    select t.name as "table", c.name as "column", c."notnull" as not_null, c.dflt_value, c.pk
    from sqlite_schema t, pragma_table_info(t.name) c
    where t.type = 'table' and t.name not like 'sqlite_%'`.execute(handle.db);
  const indexes = await sql<{ name: string }>`
    select name from sqlite_schema where type = 'index' and sql is not null`.execute(handle.db);
  return {
    columns: columns.rows.map((r) => ({
      table: r.table,
      column: r.column,
      // A primary key column is never null in Postgres; SQLite's bigserial stand-in (INTEGER PRIMARY
      // KEY AUTOINCREMENT) is the rowid, numbered by SQLite as a sequence numbers a bigserial.
      notNull: r.not_null === 1 || r.pk > 0,
      hasDefault: r.dflt_value !== null || (r.pk === 1 && r.column === 'seq'),
    })),
    indexes: indexes.rows.map((r) => r.name),
  };
}

const byName = (a: Column, b: Column) => a.table.localeCompare(b.table) || a.column.localeCompare(b.column);

let postgres: DbHandle;
let database: TestDatabase;
let embedded: DbHandle;
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-schema-'));

beforeAll(async () => {
  database = await createTestDatabase();
  postgres = await database.open();
  embedded = await openEmbedded(dataDir);
  await Promise.all([migrate(postgres), migrate(embedded)]);
});

afterAll(async () => {
  await postgres.close();
  await database.drop();
  await embedded.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('has the tables, columns, nullability and defaults of the Postgres schema', async () => {
  const [pg, lite] = await Promise.all([postgresSchema(postgres), sqliteSchema(embedded)]);
  expect(pg.columns.length).toBeGreaterThan(50);
  expect(lite.columns.sort(byName)).toEqual(pg.columns.sort(byName));
});

it('has the indexes the Postgres migrations create by name', async () => {
  const [pg, lite] = await Promise.all([postgresSchema(postgres), sqliteSchema(embedded)]);
  expect(lite.indexes.sort()).toEqual(pg.indexes.sort());
});
