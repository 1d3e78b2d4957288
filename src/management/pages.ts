/** Pages of a list: one row more than asked says whether another page exists, without a count query. */
import { AppError } from '../errors.js';
import type { ListPosition } from '../store/key-repository.js';
import { decodeCursor, encodeCursor } from './cursor.js';

/** The position a validated `cursor` names; 400 invalid_cursor when this service did not issue it. */
export function positionAfter(cursor: string | undefined, idPattern?: RegExp): ListPosition | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeCursor(cursor, idPattern);
  if (position === undefined) throw new AppError('invalid_cursor');
  return position;
}

/** One page of `rows` fetched with one row more than `limit`. */
export function pageOf<T>(
  rows: T[],
  limit: number,
  positionOf: (row: T) => ListPosition,
): { items: T[]; nextCursor?: string } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return rows.length > limit && last ? { items, nextCursor: encodeCursor(positionOf(last)) } : { items };
}
