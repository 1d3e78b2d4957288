import { SqliteAdapter, sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from './schema.js';
import type { LockableQuery, SqlDialect } from './sql-dialect.js';

/**
 * SQLite's words where Postgres' differ (src/store/sql-dialect.ts); Kysely's own adapter for the rest.
 * The schema stores time as epoch milliseconds (sql/sqlite/). One connection runs one transaction at a
 * time, and one process holds DATA_DIR (src/store/data-dir-lock.ts): nothing can change a row read
 * before the transaction ends, and there is nobody to exclude, so it takes no locks.
 */
export class SqliteSql extends SqliteAdapter implements SqlDialect {
  readonly name = 'sqlite';
  readonly migrationsFolder = 'sqlite';
  readonly now = sql<Date>`cast(unixepoch('subsec') * 1000 as integer)`;
  readonly rowId = sql.raw('rowid');

  ago(ms: number): RawBuilder<Date> {
    return sql<Date>`${this.now} - ${sql.lit(ms)}`;
  }

  lockRows<Q extends LockableQuery<Q>>(query: Q): Q {
    return query;
  }

  async transactionLock(): Promise<boolean> {
    return true;
  }

  startsWith(column: string, prefix: string): RawBuilder<boolean> {
    return sql<boolean>`substr(${sql.ref(column)}, 1, length(${prefix})) = ${prefix}`;
  }

  /** From the prefix up to the prefix followed by the last code point: every text that starts with it. */
  startsWithIgnoringCase(column: string, prefix: string): RawBuilder<boolean> {
    const folded = sql`lower(${sql.ref(column)})`;
    return sql<boolean>`(${folded} >= lower(${prefix}) and ${folded} < lower(${prefix}) || char(1114111))`;
  }

  containsIgnoringCase(column: string, text: string): RawBuilder<boolean> {
    return sql<boolean>`instr(lower(${sql.ref(column)}), lower(${text})) > 0`;
  }

  /** max() of a null is null. */
  later(a: RawBuilder<Date | null>, b: RawBuilder<Date>): RawBuilder<Date> {
    return sql<Date>`max(coalesce(${a}, ${b}), ${b})`;
  }

  timesById(alias: string, ids: readonly string[], timesMs: readonly number[]): RawBuilder<unknown> {
    const pairs = JSON.stringify(ids.map((id, i) => [id, timesMs[i]]));
    return sql`(select value ->> 0 as id, value ->> 1 as t from json_each(${pairs})) as ${sql.id(alias)}`;
  }

  /** SQLite writes a transaction's pages only when it commits: the probe commits its rows with their deletion. */
  async probeWrite(db: Kysely<Database>): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 16)
        insert into storage_probe (filler) select ${'x'.repeat(1000)} from n`.execute(trx);
      await sql`delete from storage_probe`.execute(trx);
    });
  }
}
