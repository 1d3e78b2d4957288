import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type pg from 'pg';
import { PostgresSql } from './postgres-sql.js';
import { POSTGRES_TIMEOUTS_DEFAULT, type PostgresTimeouts } from '../config.js';
import type { Database } from './schema.js';
import { withSqlDialect, type SqlDialect } from './sql-dialect.js';
import { openSqliteFile } from './sqlite-database.js';
import { SqliteSql } from './sqlite-sql.js';

export type Db = Kysely<Database>;

export interface DbHandle {
  readonly db: Db;
  readonly kind: 'postgres' | 'embedded';
  /** What its SQL says differently; `db` and its transactions carry it too (`sqlDialectOf`). */
  readonly dialect: SqlDialect;
  /** The pg pool, for its metrics; absent in embedded mode. */
  readonly pool?: pg.Pool;
  /**
   * Runs a text of several statements (a migration file) whole, inside the caller's transaction
   * `trx`: pg's simple query protocol; SQLite's `exec` (its one connection is the transaction's).
   */
  runScript(trx: Db, text: string): Promise<void>;
  close(): Promise<void>;
}

/** Postgres through node-postgres, loaded only when DATABASE_URL is set. */
export async function openPostgres(
  connectionString: string,
  timeouts: PostgresTimeouts = POSTGRES_TIMEOUTS_DEFAULT,
): Promise<DbHandle> {
  const { default: pg } = await import('pg');
  // bigint columns are counters: read them as JS numbers (exact up to 2^53; the API caps limits and credits
  // at 2^53−1).
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: timeouts.connectMs,
    idleTimeoutMillis: 30_000,
    // A query that hangs on a dead server must not hang the request that waits on it.
    query_timeout: timeouts.queryMs,
  });
  // A client losing its connection emits 'error': on the pool while idle, on the client itself while
  // checked out (between two statements of a transaction, say). Without a listener either kills the
  // process; the statement waiting on that client fails on its own.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const dialect = new PostgresSql();
  const db = new Kysely<Database>({ dialect: withSqlDialect(new PostgresDialect({ pool }), dialect) });
  return {
    db,
    kind: 'postgres',
    dialect,
    pool,
    // No parameters: pg sends the text with the simple query protocol, which takes several statements.
    runScript: async (trx, text) => void (await sql.raw(text).execute(trx)),
    close: () => db.destroy(),
  };
}

/** The embedded database's file in DATA_DIR (SQLite adds `-wal` and `-shm` beside it). */
export const EMBEDDED_FILE = 'tollgate.sqlite';
/** DATA_DIR/pglite: the embedded database of Tollgate before the SQLite store (src/store/upgrade-from-pglite.ts). */
export const PGLITE_FOLDER = 'pglite';

/**
 * WAL: readers never wait for the writer, and a commit appends to one file. `synchronous = normal`:
 * a commit is in the WAL file when it returns, so every acknowledged change survives a killed process
 * (the crash safety the embedded default promises); only a power failure or an OS crash can take the
 * last commits since a checkpoint back, never corrupting the database. FULL would fsync every commit
 * on the event loop: milliseconds each on a busy disk, in the proxy's tail latency (docs/decisions/0019).
 * Foreign keys are off by default in SQLite; the schema's cascades and references need them. The
 * busy timeout only matters when another process (an operator's sqlite3 shell) holds the write lock.
 */
const EMBEDDED_PRAGMAS = [
  'journal_mode = wal',
  'synchronous = normal',
  'foreign_keys = on',
  'busy_timeout = 500',
];

/**
 * SQLite (node:sqlite) in `DATA_DIR/tollgate.sqlite`: one connection, which Kysely's SqliteDialect
 * serialises; one process per folder (src/store/data-dir-lock.ts). A DATA_DIR that still holds the
 * PGlite database of an earlier Tollgate is refused until the `upgrade-data-dir` command has copied it:
 * opening it here would start an empty store beside the data, which the upgrade would then take for
 * its own finished copy.
 */
export async function openEmbedded(dataDir: string): Promise<DbHandle> {
  if (existsSync(join(dataDir, PGLITE_FOLDER))) {
    throw new Error(
      `DATA_DIR ${dataDir} holds the PGlite database of an earlier Tollgate: upgrade it once with ` +
        '`npm run upgrade-data-dir` (in the image: `node dist/src/main.js upgrade-data-dir`), then start again',
    );
  }
  mkdirSync(dataDir, { recursive: true });
  return openSqliteStore(join(dataDir, EMBEDDED_FILE), EMBEDDED_PRAGMAS);
}

/** The SQLite store in `file` with `pragmas`: the embedded store, or the file an upgrade fills. */
export function openSqliteStore(file: string, pragmas: readonly string[]): DbHandle {
  // Owner-only, like the generated key beside it; SQLite gives its -wal and -shm files the same mode.
  closeSync(openSync(file, 'a', 0o600));
  const database = openSqliteFile(file, pragmas);
  const dialect = new SqliteSql();
  const db = new Kysely<Database>({ dialect: withSqlDialect(new SqliteDialect({ database }), dialect) });
  return {
    db,
    kind: 'embedded',
    dialect,
    runScript: async (_trx, text) => database.exec(text),
    close: () => db.destroy(),
  };
}
