import { sql, type InsertObject, type RawBuilder } from 'kysely';
import type { Db } from './db.js';
import type { Database } from './schema.js';
import { sqlDialectOf } from './sql-dialect.js';

/** Rows per statement: at 24 values a row, SQLite's 32,766 parameters hold a slice (Postgres: 65,535). */
const SLICE = 1000;

type Column<T extends keyof Database> = keyof Database[T] & string;

/** How a row of `T` that exists already takes a new one's values. */
export interface Upsert<T extends keyof Database> {
  /** The columns a row is found by (a unique index). */
  readonly on: readonly Column<T>[];
  /** Columns whose new value is added to the stored one. */
  readonly add: readonly Column<T>[];
  /** Other columns' new values, as SQL over `<table>` (stored) and `excluded` (new). */
  readonly set?: Readonly<Record<string, RawBuilder<unknown>>>;
}

/**
 * Inserts `rows` (each with the fields of the first) into `table` a slice at a time, each slice one
 * statement that adds to the rows found by `upsert.on`. On Postgres a slice is one JSON parameter read
 * as rows of the table's own type (`jsonb_populate_recordset`): node-postgres writing each value as a
 * parameter of its own was the largest part of Node's time for a batch of many keys
 * (docs/performance.md, "Usage batches of many keys"). SQLite binds the values, with no such cost.
 * Table and column names are the caller's constants.
 */
export async function upsertRows<T extends keyof Database & string>(
  trx: Db,
  table: T,
  rows: readonly InsertObject<Database, T>[],
  upsert: Upsert<T>,
): Promise<void> {
  if (rows.length === 0) return;
  const postgres = sqlDialectOf(trx).name === 'postgres';
  const columns = Object.keys(rows[0]!) as (keyof InsertObject<Database, T> & string)[];
  const updates: Record<string, RawBuilder<unknown>> = { ...upsert.set };
  for (const column of upsert.add)
    updates[column] = sql`${sql.raw(table)}.${sql.raw(column)} + excluded.${sql.raw(column)}`;
  for (let i = 0; i < rows.length; i += SLICE) {
    const slice = rows.slice(i, i + SLICE);
    const insert = trx.insertInto(table);
    const filled = postgres
      ? insert
          .columns(columns)
          .expression(
            sql`select ${sql.join(columns.map((c) => sql.ref(c)))} from jsonb_populate_recordset(null::${sql.table(table)}, ${jsonOf(slice)}::jsonb)`,
          )
      : insert.values(slice);
    await filled.onConflict((oc) => oc.columns(upsert.on as never).doUpdateSet(updates as never)).execute();
  }
}

/**
 * Rows as JSON that Postgres takes: JSON.stringify writes a lone surrogate (a token's `sub` may hold
 * one) as an escape that jsonb refuses, where a parameter of its own is sent in UTF-8 with U+FFFD in
 * its place. The same replacement here, on the rare text that may hold one.
 */
function jsonOf(rows: readonly unknown[]): string {
  const text = JSON.stringify(rows);
  if (!text.includes('\\ud')) return text;
  return JSON.stringify(rows, (_, value: unknown) =>
    typeof value === 'string' ? value.toWellFormed() : value,
  );
}
