import { sql } from 'kysely';
import type { Db } from './db.js';
import { sqlDialectOf } from './sql-dialect.js';

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
      await sqlDialectOf(this.db).probeWrite(this.db);
    } catch (err) {
      throw new Error(`the database refuses writes: ${this.refusal}`, { cause: err });
    }
    this.refusal = undefined;
  }
}
