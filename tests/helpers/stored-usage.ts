import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sql } from 'kysely';
import pg from 'pg';
import { EMBEDDED_FILE, type Db } from '../../src/store/db.js';

/** Where a Tollgate under test stores usage: a Postgres database, or an embedded DATA_DIR (SQLite). */
export type UsageStore = { readonly databaseUrl: string } | { readonly dataDir: string };

const SUM = `select sum(requests) as n from usage_buckets where granularity = 'minute' and key_id`;

/**
 * The requests of `keyIds` in the minute buckets Tollgate stored: what a billing export reads. A key's
 * detail counts usage still in memory too, so it can show a request the store does not hold yet.
 */
export async function storedMinuteRequests(store: UsageStore, keyIds: readonly string[]): Promise<number> {
  if ('dataDir' in store) {
    const db = new DatabaseSync(join(store.dataDir, EMBEDDED_FILE), { readOnly: true });
    try {
      const row = db.prepare(`${SUM} in (${keyIds.map(() => '?').join(', ')})`).get(...keyIds) as {
        n: number | null;
      };
      return row.n ?? 0;
    } finally {
      db.close();
    }
  }
  const db = new pg.Client({ connectionString: store.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: string | null }>(`${SUM} = any($1)`, [keyIds]);
    return Number(rows[0]!.n ?? 0);
  } finally {
    await db.end();
  }
}

/** The same, read through Tollgate's own database handle (a harness's, either dialect). */
export async function storedMinuteRequestsIn(db: Db, keyIds: readonly string[]): Promise<number> {
  const { rows } = await sql<{ n: number | string | null }>`${sql.raw(SUM)} in (${sql.join(keyIds)})`.execute(
    db,
  );
  return Number(rows[0]?.n ?? 0);
}
