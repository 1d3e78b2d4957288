import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * SQLite result codes (extended first, then primary) as the SQLSTATEs the rest of Tollgate already
 * reads from Postgres: a full disk is 53100 wherever it comes from, a broken foreign key 23503.
 */
const SQLSTATE_BY_EXTENDED_CODE = new Map([
  [787, '23503'], // SQLITE_CONSTRAINT_FOREIGNKEY: foreign_key_violation
  [1555, '23505'], // SQLITE_CONSTRAINT_PRIMARYKEY: unique_violation
  [2067, '23505'], // SQLITE_CONSTRAINT_UNIQUE
  [275, '23514'], // SQLITE_CONSTRAINT_CHECK: check_violation
  [1299, '23502'], // SQLITE_CONSTRAINT_NOTNULL: not_null_violation
  [1811, 'P0001'], // SQLITE_CONSTRAINT_TRIGGER, RAISE() in a trigger: raise_exception
]);
const SQLSTATE_BY_PRIMARY_CODE = new Map([
  [13, '53100'], // SQLITE_FULL: disk_full
  [10, '58030'], // SQLITE_IOERR: io_error
  [8, '25006'], // SQLITE_READONLY: read_only_sql_transaction
  [5, '55P03'], // SQLITE_BUSY: lock_not_available (another process holds the write lock)
]);

/** node:sqlite's error: `errcode` is SQLite's extended result code. */
interface SqliteError {
  readonly message: string;
  readonly errcode?: unknown;
}

/** The error as Tollgate reads database errors: message kept, SQLSTATE in `code`, the original as cause. */
function translated(err: unknown): unknown {
  const { errcode, message } = err as SqliteError;
  if (typeof errcode !== 'number') return err;
  const code = SQLSTATE_BY_EXTENDED_CODE.get(errcode) ?? SQLSTATE_BY_PRIMARY_CODE.get(errcode & 0xff);
  return Object.assign(new Error(message, { cause: err }), code === undefined ? {} : { code });
}

function attempt<T>(work: () => T): T {
  try {
    return work();
  } catch (err) {
    throw translated(err);
  }
}

/** Timestamps are stored as epoch milliseconds and booleans as 0/1 (sql/sqlite/ declares them so). */
function bind(parameters: ReadonlyArray<unknown>): SQLInputValue[] {
  return parameters.map((p) =>
    p instanceof Date ? p.getTime() : typeof p === 'boolean' ? Number(p) : (p as SQLInputValue),
  );
}

type Row = Record<string, unknown>;

/**
 * One prepared statement. Results come back typed as pg types them: a column declared `timestamptz`
 * as a Date, `boolean` as a boolean, by the declared type SQLite reports for each result column
 * (a column read through an alias, a subquery or RETURNING keeps it; an expression has none).
 */
class Statement implements SqliteStatement {
  readonly reader: boolean;
  private readonly dates: string[] = [];
  private readonly booleans: string[] = [];

  constructor(private readonly statement: StatementSync) {
    const columns = statement.columns();
    this.reader = columns.length > 0;
    for (const { name, type } of columns) {
      if (type === 'timestamptz') this.dates.push(name);
      else if (type === 'boolean') this.booleans.push(name);
    }
  }

  private typed(row: Row): Row {
    for (const name of this.dates) if (row[name] !== null) row[name] = new Date(row[name] as number);
    for (const name of this.booleans) if (row[name] !== null) row[name] = row[name] === 1;
    return row;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    const rows = attempt(() => this.statement.all(...bind(parameters))) as Row[];
    return this.dates.length + this.booleans.length === 0 ? rows : rows.map((row) => this.typed(row));
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    return attempt(() => this.statement.run(...bind(parameters)));
  }

  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    for (const row of attempt(() => this.statement.iterate(...bind(parameters))))
      yield this.typed(row as Row);
  }
}

/**
 * SQLite ends a transaction by itself on some errors (a full disk, SQLITE_FULL): the rollback Kysely
 * sends next must not replace that error with "cannot rollback - no transaction is active".
 */
const NOTHING_TO_ROLL_BACK: SqliteStatement = {
  reader: false,
  all: () => [],
  run: () => ({ changes: 0, lastInsertRowid: 0 }),
  iterate: () => [][Symbol.iterator](),
};

/** Statements kept prepared: Tollgate's queries are a few dozen texts (an IN list varies in length). */
const STATEMENT_CACHE_SIZE = 256;

/** node:sqlite's DatabaseSync as Kysely's SqliteDialect drives it (the subset of better-sqlite3 it uses). */
export class NodeSqliteDatabase implements SqliteDatabase {
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly database: DatabaseSync) {}

  prepare(sql: string): SqliteStatement {
    if (sql === 'rollback' && !this.database.isTransaction) return NOTHING_TO_ROLL_BACK;
    let statement = this.statements.get(sql);
    if (statement) {
      // Most recently used last: the first entry is the one to drop.
      this.statements.delete(sql);
    } else {
      statement = new Statement(attempt(() => this.database.prepare(sql)));
      if (this.statements.size >= STATEMENT_CACHE_SIZE)
        this.statements.delete(this.statements.keys().next().value!);
    }
    this.statements.set(sql, statement);
    return statement;
  }

  /** Runs a text of several statements (a migration file) whole. */
  exec(text: string): void {
    attempt(() => this.database.exec(text));
  }

  close(): void {
    this.statements.clear();
    this.database.close();
  }
}

/** Opens (creating it if need be) the database file at `path`, SQLite errors translated like every query's. */
export function openSqliteFile(path: string, pragmas: readonly string[]): NodeSqliteDatabase {
  const database = attempt(() => new DatabaseSync(path));
  try {
    attempt(() => database.exec(pragmas.map((p) => `pragma ${p};`).join('\n')));
  } catch (err) {
    database.close();
    throw err;
  }
  return new NodeSqliteDatabase(database);
}
