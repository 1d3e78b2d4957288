/** Pages of a list: one row more than asked says whether another page exists, without a count query. */
import { AppError } from '../errors.js';
import type { ListPosition } from '../store/list-position.js';
import { decodeCursor, encodeCursor } from './cursor.js';

/** The position a validated `cursor` names; 400 invalid_cursor when this service did not issue it. */
export function positionAfter(cursor: string | undefined, idPattern?: RegExp): ListPosition | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeCursor(cursor, idPattern);
  if (position === undefined) throw new AppError('invalid_cursor');
  return position;
}

/** One page of `rows` fetched with one row more than `limit`, its cursor made by `cursorOf` from its last row. */
export function pageWithCursor<T>(
  rows: T[],
  limit: number,
  cursorOf: (row: T) => string,
): { items: T[]; nextCursor?: string } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return rows.length > limit && last ? { items, nextCursor: cursorOf(last) } : { items };
}

/** One page of `rows` fetched with one row more than `limit`, ordered by creation time, then id. */
export function pageOf<T>(
  rows: T[],
  limit: number,
  positionOf: (row: T) => ListPosition,
): { items: T[]; nextCursor?: string } {
  return pageWithCursor(rows, limit, (row) => encodeCursor(positionOf(row)));
}
