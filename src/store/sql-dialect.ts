import type { Dialect, DialectAdapter, Kysely, RawBuilder } from 'kysely';
import type { Database } from './schema.js';

/** A query that can hold the rows it reads until its transaction ends. */
export interface LockableQuery<Q> {
  forUpdate(): Q;
  forKeyShare(): Q;
}

/**
 * What the two SQL dialects of the store say differently: Postgres (a server, or PGlite while an old
 * DATA_DIR is upgraded) and the embedded SQLite. Modelled on Kysely's `DialectAdapter`, which it
 * extends and replaces: the handle opens with its dialect (src/store/db.ts), and every Kysely instance
 * and transaction made from it carries that object, so a repository asks `sqlDialectOf(db)` and writes
 * one query for both wherever the SQL is the same. Postgres' words are `PostgresSql`, SQLite's
 * `SqliteSql`.
 */
export interface SqlDialect extends DialectAdapter {
  readonly name: 'postgres' | 'sqlite';
  /** Where its migrations are, under sql/. */
  readonly migrationsFolder: string;
  /** The database's clock as a timestamptz column stores it; no parameters, so a DDL default may use it. */
  readonly now: RawBuilder<Date>;
  /** The database's clock `ms` milliseconds ago, as a timestamptz column stores it. */
  ago(ms: number): RawBuilder<Date>;
  /** Names a row of any table, for a delete in batches. */
  readonly rowId: RawBuilder<unknown>;
  /**
   * A read that holds its rows until the transaction ends: `update` before changing them, `key share`
   * so that they cannot be deleted meanwhile.
   */
  lockRows<Q extends LockableQuery<Q>>(query: Q, strength: 'update' | 'key share'): Q;
  /**
   * A transaction-scoped lock that replicas sharing a database take before work only one of them may
   * do; `wait: false` answers false at once when another holds it.
   */
  transactionLock(trx: Kysely<Database>, lockId: number, wait: boolean): Promise<boolean>;
  /** Whether the text `column` starts with `prefix`. */
  startsWith(column: string, prefix: string): RawBuilder<boolean>;
  /**
   * Whether `lower(column)` starts with `lower(prefix)`, as a range an index on `lower(column)` answers
   * (sql/071_key_list_search.sql). Postgres lowers every letter its locale knows; SQLite A-Z only.
   */
  startsWithIgnoringCase(column: string, prefix: string): RawBuilder<boolean>;
  /** Whether `lower(column)` holds `lower(text)` anywhere (a scan: for short lists, such as consumers). */
  containsIgnoringCase(column: string, text: string): RawBuilder<boolean>;
  /** The later of two times, a null one counting as earlier than any. */
  later(a: RawBuilder<Date | null>, b: RawBuilder<Date>): RawBuilder<Date>;
  /** A table `alias` of columns `id` and `t` (a time), one row per id, in one or two parameters whatever the count. */
  timesById(alias: string, ids: readonly string[], timesMs: readonly number[]): RawBuilder<unknown>;
  /** A write of a few kilobytes that needs new space on disk and leaves nothing behind. */
  probeWrite(db: Kysely<Database>): Promise<void>;
}

/** The SqlDialects handed to Kysely by `withSqlDialect`: anything else was not opened by db.ts. */
const handedOut = new WeakSet<DialectAdapter>();

/** Kysely's `dialect` with `sql` as its adapter: every instance and transaction made from it carries `sql`. */
export function withSqlDialect(dialect: Dialect, sql: SqlDialect): Dialect {
  handedOut.add(sql);
  return {
    createDriver: () => dialect.createDriver(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => sql,
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

/** The dialect of a database opened by src/store/db.ts, or of one of its transactions. */
export function sqlDialectOf(db: Kysely<Database>): SqlDialect {
  const adapter = db.getExecutor().adapter;
  if (!handedOut.has(adapter)) {
    throw new Error('this database was not opened by src/store/db.ts: it has no SqlDialect');
  }
  return adapter as SqlDialect;
}
