import { SqliteIntrospector, sql } from 'kysely';
import type { Db } from './db.js';

/**
 * The SQL a database speaks: Postgres (a server, or PGlite when an old DATA_DIR is upgraded) or the
 * embedded SQLite. The repositories write one query for both wherever the SQL is the same, and take
 * the few places where it is not from here or from a small table at their top.
 */
export type Dialect = 'postgres' | 'sqlite';

/** The dialect of a Kysely instance or of one of its transactions. */
export function dialectOf(db: Db): Dialect {
  return db.introspection instanceof SqliteIntrospector ? 'sqlite' : 'postgres';
}

/**
 * A read that holds its rows until the transaction ends: `update` before changing them, `key share`
 * so that they cannot be deleted meanwhile. SQLite runs one transaction at a time on its one
 * connection, so nothing can change a row it read before the transaction ends: it takes no lock.
 */
export function lockingRows<Q extends { forUpdate(): Q; forKeyShare(): Q }>(dialect: Dialect, query: Q, strength: 'update' | 'key share'): Q {
  if (dialect === 'sqlite') return query;
  return strength === 'update' ? query.forUpdate() : query.forKeyShare();
}

/**
 * A transaction-scoped lock that replicas sharing a Postgres take before work only one of them may do;
 * `wait: false` answers false at once when another holds it. Embedded SQLite has one process per
 * DATA_DIR (src/store/data-dir-lock.ts): there is nobody to exclude.
 */
export async function transactionLock(trx: Db, lockId: number, wait: boolean): Promise<boolean> {
  if (dialectOf(trx) === 'sqlite') return true;
  if (wait) {
    await sql`select pg_advisory_xact_lock(${lockId})`.execute(trx);
    return true;
  }
  const locked = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${lockId}) as locked`.execute(trx);
  return locked.rows[0]?.locked === true;
}
