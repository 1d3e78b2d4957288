import { Kysely } from 'kysely';
import type { DbHandle } from './db.js';
import type { Database } from './schema.js';

/** DATA_DIR/pglite: the embedded database of Tollgate before the SQLite store. */
export const PGLITE_FOLDER = 'pglite';

/**
 * PGlite (Postgres in WebAssembly) in `folder`: the embedded store of Tollgate before SQLite, opened
 * only to upgrade such a DATA_DIR (src/store/upgrade-from-pglite.ts). Both modules load lazily: a
 * normal start never loads PGlite. One connection in one process.
 */
export async function openPglite(folder: string): Promise<DbHandle> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const client = await PGlite.create(folder);
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
  return { db, kind: 'embedded', runScript: async (_trx, text) => void (await client.exec(text)), close: () => db.destroy() };
}
