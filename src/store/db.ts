import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;

export interface DbHandle {
  readonly db: Db;
  readonly kind: 'postgres' | 'embedded';
  /** The pg pool, for its metrics; absent in embedded mode. */
  readonly pool?: pg.Pool;
  /**
   * Runs a text of several statements (a migration file) whole, inside the caller's transaction
   * `trx`: pg's simple query protocol, PGlite's `exec` (its one session is the transaction's).
   */
  runScript(trx: Db, text: string): Promise<void>;
  close(): Promise<void>;
}

// bigint columns are counters: read them as JS numbers (exact up to 2^53, the contract's own cap).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export async function openPostgres(connectionString: string, max = 10): Promise<DbHandle> {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
    // A query that hangs on a dead server must not hang the request that waits on it.
    query_timeout: 5_000,
  });
  // An idle client losing its connection emits 'error' on the pool; without a listener that kills the process.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    kind: 'postgres',
    pool,
    // No parameters: pg sends the text with the simple query protocol, which takes several statements.
    runScript: async (trx, text) => void (await sql.raw(text).execute(trx)),
    close: () => db.destroy(),
  };
}

/**
 * PGlite sizes its buffers like a server's (shared_buffers 128MB); Tollgate's tables are small and its
 * hot reads are served from its own caches. Smaller buffers take a reopened database from 317 to
 * 183 MiB resident and 0.58 to 0.41 s (docs/decisions/0007). Durability settings are PGlite's own.
 */
const EMBEDDED_SETTINGS = ['shared_buffers=16MB', 'wal_buffers=1MB', 'work_mem=1MB'];

/** PGlite in `dataDir`: one connection in one process; never point two processes at one folder. */
export async function openEmbedded(dataDir: string): Promise<DbHandle> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const folder = join(dataDir, 'pglite');
  mkdirSync(folder, { recursive: true });
  const client = await PGlite.create(folder, {
    startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS.flatMap((setting) => ['-c', setting])],
  });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
  return { db, kind: 'embedded', runScript: async (_trx, text) => void (await client.exec(text)), close: () => db.destroy() };
}
