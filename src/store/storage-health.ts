import { sql } from 'kysely';
import type { Db } from './db.js';
import { dialectOf, type Dialect } from './dialect.js';

/** Thrown inside the probe's transaction so that Kysely rolls it back. */
const ROLLBACK = new Error('probe rolled back');

/**
 * A write of a few kilobytes that needs new space and leaves nothing behind. Postgres writes a row's
 * pages and WAL as it inserts, so a rolled-back insert tests the disk. SQLite writes a transaction's
 * pages only when it commits, so its probe commits the rows with their deletion.
 */
const PROBE_WRITE = {
  async postgres(db: Db): Promise<void> {
    try {
      await db.transaction().execute(async (trx) => {
        await sql`insert into storage_probe (filler) select repeat('x', 1000) from generate_series(1, 16)`.execute(trx);
        throw ROLLBACK;
      });
    } catch (err) {
      if (err !== ROLLBACK) throw err;
    }
  },
  async sqlite(db: Db): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 16)
        insert into storage_probe (filler) select ${'x'.repeat(1000)} from n`.execute(trx);
      await sql`delete from storage_probe`.execute(trx);
    });
  },
} satisfies Record<Dialect, (db: Db) => Promise<void>>;

/**
 * Whether the database takes writes. Reads answering is not enough: a full disk (SQLSTATE 53100) or a
 * read-only server (25006) answers `select 1` while every insert fails. A refused write marks the
 * database refusing; from then on readiness probes with a write that needs new space (a few kilobytes,
 * left nowhere) until one succeeds. While nothing was refused, readiness only pings.
 */
export class StorageHealth {
  private refusal: string | undefined;

  constructor(private readonly db: Db) {}

  /** A write failed because the database refuses writes (see `isStorageRefusingWrites`). */
  refused(reason: string): void {
    this.refusal = reason;
  }

  /** Readiness: resolves while the database answers and takes writes. */
  async check(): Promise<void> {
    await sql`select 1`.execute(this.db);
    if (this.refusal === undefined) return;
    try {
      await PROBE_WRITE[dialectOf(this.db)](this.db);
    } catch (err) {
      throw new Error(`the database refuses writes: ${this.refusal}`, { cause: err });
    }
    this.refusal = undefined;
  }
}
