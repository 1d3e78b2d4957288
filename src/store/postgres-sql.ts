import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from './schema.js';
import type { LockableQuery, SqlDialect } from './sql-dialect.js';

/** Thrown inside the storage probe's transaction so that Kysely rolls it back. */
const ROLLBACK = new Error('probe rolled back');
/** 16 kB of rows: new pages. */
const PROBE_ROWS = sql`insert into storage_probe (filler) select repeat('x', 1000) from generate_series(1, 16)`;

/** Postgres' words where SQLite's differ (src/store/sql-dialect.ts); Kysely's own adapter for the rest. */
export class PostgresSql extends PostgresAdapter implements SqlDialect {
  readonly name = 'postgres';
  readonly migrationsFolder = '.';
  readonly now = sql<Date>`now()`;
  readonly rowId = sql.raw('ctid');

  ago(ms: number): RawBuilder<Date> {
    return sql<Date>`now() - ${sql.lit(ms)} * interval '1 millisecond'`;
  }

  lockRows<Q extends LockableQuery<Q>>(query: Q, strength: 'update' | 'key share'): Q {
    return strength === 'update' ? query.forUpdate() : query.forKeyShare();
  }

  async transactionLock(trx: Kysely<Database>, lockId: number, wait: boolean): Promise<boolean> {
    if (wait) {
      await sql`select pg_advisory_xact_lock(${lockId})`.execute(trx);
      return true;
    }
    const tryLock = sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${lockId}) as locked`;
    return (await tryLock.execute(trx)).rows[0]?.locked === true;
  }

  startsWith(column: string, prefix: string): RawBuilder<boolean> {
    return sql<boolean>`starts_with(${sql.ref(column)}, ${prefix})`;
  }

  /** LIKE with a constant prefix: the planner turns it into a range of a `text_pattern_ops` index. */
  startsWithIgnoringCase(column: string, prefix: string): RawBuilder<boolean> {
    const escaped = prefix.replace(/[\\%_]/g, '\\$&');
    return sql<boolean>`lower(${sql.ref(column)}) like lower(${escaped}) || '%'`;
  }

  containsIgnoringCase(column: string, text: string): RawBuilder<boolean> {
    return sql<boolean>`strpos(lower(${sql.ref(column)}), lower(${text})) > 0`;
  }

  /** greatest() skips nulls. */
  later(a: RawBuilder<Date | null>, b: RawBuilder<Date>): RawBuilder<Date> {
    return sql<Date>`greatest(${a}, ${b})`;
  }

  timesById(alias: string, ids: readonly string[], timesMs: readonly number[]): RawBuilder<unknown> {
    const times = timesMs.map((t) => new Date(t).toISOString());
    return sql`unnest(${ids}::text[], ${times}::timestamptz[]) as ${sql.id(alias)}(id, t)`;
  }

  /** Postgres writes a row's pages and WAL as it inserts, so an insert rolled back tests the disk. */
  async probeWrite(db: Kysely<Database>): Promise<void> {
    try {
      await db.transaction().execute(async (trx) => {
        await PROBE_ROWS.execute(trx);
        throw ROLLBACK;
      });
    } catch (err) {
      if (err !== ROLLBACK) throw err;
    }
  }
}
