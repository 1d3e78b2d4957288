import { Kysely } from 'kysely';
import type { DbHandle } from './db.js';
import { PostgresSql } from './postgres-sql.js';
import type { Database } from './schema.js';
import { withSqlDialect } from './sql-dialect.js';

/** Both optional dependencies, or an error that says how to install them. */
async function loadPglite() {
  try {
    const [{ PGlite }, { PGliteDialect }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('kysely-pglite-dialect'),
    ]);
    return { PGlite, PGliteDialect };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new Error(
      'PGlite is not installed: it reads the old DATA_DIR, and is an optional dependency (@electric-sql/pglite, ' +
        'kysely-pglite-dialect); install the dependencies without --omit=optional (`npm ci`), then run upgrade-data-dir again',
      { cause: err },
    );
  }
}

/**
 * PGlite (Postgres in WebAssembly) in `folder`: the embedded store of Tollgate before SQLite, opened
 * only by the `upgrade-data-dir` command (src/store/upgrade-from-pglite.ts), never by a serving
 * process. One connection in one process; it speaks Postgres.
 */
export async function openPglite(folder: string): Promise<DbHandle> {
  const { PGlite, PGliteDialect } = await loadPglite();
  const client = await PGlite.create(folder);
  const dialect = new PostgresSql();
  const db = new Kysely<Database>({ dialect: withSqlDialect(new PGliteDialect(client), dialect) });
  return {
    db,
    kind: 'embedded',
    dialect,
    runScript: async (_trx, text) => void (await client.exec(text)),
    close: () => db.destroy(),
  };
}
