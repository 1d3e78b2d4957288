import { readdir, readFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { sql } from 'kysely';
import type { DbHandle } from './db.js';
import { dialectOf, transactionLock, type Dialect } from './dialect.js';

/** Any fixed number: every replica takes the same transaction-scoped advisory lock before migrating. */
const MIGRATION_LOCK_ID = 7_110_451_234;

/** sql/ at the project root, whether this runs from src/ (tests) or dist/src/ (the build). */
export const SQL_DIR = join(
  import.meta.dirname,
  import.meta.dirname.includes(`${sep}dist${sep}`) ? '../../..' : '../..',
  'sql',
);

/** Postgres' migrations are sql/NNN_*.sql; the embedded SQLite store's are sql/sqlite/NNN_*.sql. */
export function migrationsDir(dialect: Dialect, root: string = SQL_DIR): string {
  return dialect === 'postgres' ? root : join(root, 'sqlite');
}

/** The table of applied migrations, in each dialect's words (SQLite has no now()). */
const MIGRATIONS_TABLE = {
  postgres: sql`create table if not exists schema_migrations (
    name text primary key, applied_at timestamptz not null default now())`,
  sqlite: sql`create table if not exists schema_migrations (
    name text primary key not null, applied_at timestamptz not null default (cast(unixepoch('subsec') * 1000 as integer)))`,
};

/**
 * Applies the numbered files of `dir` (by default the database's own: see `migrationsDir`) that have
 * not run yet, all in one transaction under an advisory lock, so replicas that start together apply
 * each migration exactly once. Each file runs whole, as the database parses it (a `$$` function body
 * or a trigger's BEGIN … END included). Returns the names applied.
 */
export async function migrate(handle: DbHandle, dir?: string): Promise<string[]> {
  const dialect = dialectOf(handle.db);
  const folder = dir ?? migrationsDir(dialect);
  const files = (await readdir(folder)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return handle.db.transaction().execute(async (trx) => {
    await transactionLock(trx, MIGRATION_LOCK_ID, true);
    await MIGRATIONS_TABLE[dialect].execute(trx);
    const done = await sql<{ name: string }>`select name from schema_migrations`.execute(trx);
    const applied = new Set(done.rows.map((r) => r.name));
    const ran: string[] = [];
    for (const file of files) {
      if (applied.has(file)) continue;
      await handle.runScript(trx, await readFile(join(folder, file), 'utf8'));
      await sql`insert into schema_migrations (name) values (${file})`.execute(trx);
      ran.push(file);
    }
    return ran;
  });
}
