import { readdir, readFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { sql } from 'kysely';
import type { DbHandle } from './db.js';

/** Any fixed number: every replica takes the same transaction-scoped advisory lock before migrating. */
const MIGRATION_LOCK_ID = 7_110_451_234;

/** sql/ at the project root, whether this runs from src/ (tests) or dist/src/ (the build). */
export const SQL_DIR = join(
  import.meta.dirname,
  import.meta.dirname.includes(`${sep}dist${sep}`) ? '../../..' : '../..',
  'sql',
);

/**
 * Applies the numbered files of sql/ that have not run yet, all in one transaction under an advisory
 * lock, so replicas that start together apply each migration exactly once. Each file runs whole, as
 * Postgres parses it (a `$$` function body included). Returns the names applied.
 */
export async function migrate(handle: DbHandle, dir: string = SQL_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return handle.db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_ID})`.execute(trx);
    await sql`create table if not exists schema_migrations (
      name text primary key, applied_at timestamptz not null default now())`.execute(trx);
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
