import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { EMBEDDED_FILE, openSqliteStore, PGLITE_FOLDER, type Db, type DbHandle } from './db.js';
import { migrate } from './migrate.js';
import { openPglite } from './pglite.js';

export interface PgliteUpgrade {
  /** Rows copied, per table (empty when an earlier start had copied them). */
  readonly rows: Readonly<Record<string, number>>;
  /** Where PGlite's folder now is: kept, never deleted. */
  readonly keptAt: string;
}

/**
 * The file being filled: a rollback journal rather than WAL, so that the one file is complete once
 * its transaction commits and can be renamed into place. Foreign keys are checked once, at the end:
 * tables are copied in the order the schema created them.
 */
const UPGRADE_PRAGMAS = ['journal_mode = delete', 'synchronous = full', 'foreign_keys = off'];
/** Rows read from PGlite at a time, so that a long usage history never sits in memory whole. */
const PAGE_ROWS = 5_000;
/** SQLite takes at most 32,766 parameters in a statement. */
const MAX_PARAMETERS = 30_000;

type Row = Record<string, unknown>;
/** The copy reads and writes every table alike, whatever its columns. */
type AnyTables = Record<string, Row>;

/** Every table of the new store but the migrations' own, in the order the schema created them. */
async function tablesOf(db: Db): Promise<string[]> {
  const tables = await sql<{ name: string }>`
    select name from sqlite_schema where type = 'table' and name not like 'sqlite_%' and name <> 'schema_migrations'
    order by rowid`.execute(db);
  return tables.rows.map((t) => t.name);
}

/** Copies one table page by page (in physical order, by ctid); returns the rows copied. */
async function copyTable(from: Db, to: Db, table: string): Promise<number> {
  let copied = 0;
  let after = '(0,0)';
  for (;;) {
    const page = await sql<Row & { ctid: string }>`
      select ctid::text as ctid, * from ${sql.table(table)} where ctid > ${after}::tid order by ctid limit ${PAGE_ROWS}`.execute(
      from,
    );
    if (page.rows.length === 0) return copied;
    after = page.rows.at(-1)!.ctid;
    const rows = page.rows.map(({ ctid: _ctid, ...row }) => row);
    const chunk = Math.max(1, Math.floor(MAX_PARAMETERS / Object.keys(rows[0]!).length));
    for (let i = 0; i < rows.length; i += chunk) {
      await (to as unknown as Kysely<AnyTables>)
        .insertInto(table)
        .values(rows.slice(i, i + chunk))
        .execute();
    }
    copied += rows.length;
  }
}

/**
 * Copies every row of the PGlite database in `folder` into a new SQLite store in `file`, in one
 * transaction. PGlite is first brought to today's Postgres schema, as the Tollgate that wrote it
 * would have done at its next start, so that both sides have the same tables and columns.
 */
async function copyInto(folder: string, file: string): Promise<Record<string, number>> {
  const source: DbHandle = await openPglite(folder);
  try {
    await migrate(source);
    const target = openSqliteStore(file, UPGRADE_PRAGMAS);
    try {
      await migrate(target);
      return await target.db.transaction().execute(async (trx) => {
        const rows: Record<string, number> = {};
        for (const table of await tablesOf(trx)) rows[table] = await copyTable(source.db, trx, table);
        const broken = await sql`select * from pragma_foreign_key_check`.execute(trx);
        if (broken.rows.length > 0)
          throw new Error(`${broken.rows.length} copied rows refer to rows that do not exist`);
        return rows;
      });
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/**
 * Before docs/decisions/0019 the embedded store was PGlite in DATA_DIR/pglite. Such a DATA_DIR is upgraded
 * once, by the `upgrade-data-dir` command: its rows go into a new SQLite file, which is renamed into place
 * once complete (the commit point: a crash before it leaves PGlite's folder untouched, and the next run
 * begins again), then PGlite's folder is renamed aside. The generated encryption key and the usage journal
 * stay as they are: both keep their format. Returns what was done, or undefined when there was nothing to do.
 */
export async function upgradeFromPglite(
  dataDir: string,
  now = new Date(),
): Promise<PgliteUpgrade | undefined> {
  const folder = join(dataDir, PGLITE_FOLDER);
  if (!existsSync(folder)) return undefined;
  const store = join(dataDir, EMBEDDED_FILE);
  const keptAt = join(
    dataDir,
    `${PGLITE_FOLDER}-upgraded-${now.toISOString().slice(0, 19).replace(/:/g, '')}`,
  );
  // The store exists only once an upgrade committed (openEmbedded never starts one beside PGlite's
  // folder): an earlier run copied everything and stopped before setting the folder aside.
  if (existsSync(store)) {
    renameSync(folder, keptAt);
    return { rows: {}, keptAt };
  }
  const partial = `${store}.upgrading`;
  rmSync(partial, { force: true });
  rmSync(`${partial}-journal`, { force: true });
  try {
    const rows = await copyInto(folder, partial);
    renameSync(partial, store);
    renameSync(folder, keptAt);
    return { rows, keptAt };
  } finally {
    rmSync(partial, { force: true });
  }
}
