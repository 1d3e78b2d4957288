import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import { PACKAGE_ROOT } from '../package-root.js';
import type { DbHandle } from './db.js';

/** Any fixed number: every replica takes the same transaction-scoped advisory lock before migrating. */
const MIGRATION_LOCK_ID = 7_110_451_234;

/** sql/ at the project root. */
export const SQL_DIR = join(PACKAGE_ROOT, 'sql');

/**
 * Applies the numbered files of `dir` (by default the database's own: sql/NNN_*.sql for Postgres,
 * sql/sqlite/NNN_*.sql for the embedded SQLite store) that have not run yet, all in one transaction
 * under an advisory lock, so replicas that start together apply each migration exactly once. Each file
 * runs whole, as the database parses it (a `$$` function body or a trigger's BEGIN … END included).
 * Returns the names applied.
 */
export async function migrate(
  handle: DbHandle,
  dir = join(SQL_DIR, handle.dialect.migrationsFolder),
): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return handle.db.transaction().execute(async (trx) => {
    await handle.dialect.transactionLock(trx, MIGRATION_LOCK_ID, true);
    // SQLite takes a null primary key unless told not to.
    await sql`create table if not exists schema_migrations (
      name text primary key not null, applied_at timestamptz not null default (${handle.dialect.now}))`.execute(
      trx,
    );
    const done = await sql<{ name: string }>`select name from schema_migrations`.execute(trx);
    const applied = new Set(done.rows.map((r) => r.name));
    const ran: string[] = [];
    for (const file of files) {
      if (applied.has(file)) continue;
      await handle.runScript(trx, await readFile(join(dir, file), 'utf8'));
      await sql`insert into schema_migrations (name) values (${file})`.execute(trx);
      ran.push(file);
    }
    return ran;
  });
}
