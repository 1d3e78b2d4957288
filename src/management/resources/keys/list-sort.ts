/**
 * The key list's `sort` and its cursors. Oldest first (`createdAt`) is the list as it always was, and
 * keeps its cursors (cursor.ts). Every other order has cursors of its own, `k1:<sort>:<since>:<value>:<id>`
 * in base64url, which name their order: a cursor of one order given with another is refused, and a
 * traffic order keeps the window its first page counted (docs/decisions/0055-key-list-search-and-sort.md).
 */
import { AppError } from '../../../errors.js';
import type { KeyOrder, KeyPosition, KeySortField } from '../../../store/key-list-order.js';
import type { ListedKey } from '../../../store/key-repository.js';
import { windowAt } from '../../../plans/window.js';
import { encodeCursor } from '../../cursor.js';
import { positionAfter } from '../../pages.js';

export const KEY_SORTS = [
  'createdAt',
  '-createdAt',
  'lastUsedAt',
  '-lastUsedAt',
  'requests24h',
  '-requests24h',
] as const;
export type KeySort = (typeof KEY_SORTS)[number];

const DAY_MS = 86_400_000;
const SORTED_CURSOR =
  /^k1:(-?[A-Za-z0-9]{1,16}):(0|[1-9][0-9]{0,15})?:(null|0|[1-9][0-9]{0,15}):([A-Za-z0-9._~:-]{1,128})$/;

const fieldOf = (sort: KeySort): KeySortField => sort.replace(/^-/, '') as KeySortField;

function encodeSorted(sort: KeySort, since: Date | undefined, position: KeyPosition): string {
  const text = `k1:${sort}:${since?.getTime() ?? ''}:${position.value ?? 'null'}:${position.id}`;
  return Buffer.from(text, 'utf8').toString('base64url');
}

/**
 * The order `sort` names and the position `cursor` continues after; 400 invalid_cursor when the cursor
 * was not issued for this order. requests24h counts the hour buckets the usage API's 24-hour range
 * holds (the sparkline's), from the first page on.
 */
export function keyListPage(
  sort: KeySort,
  cursor: string | undefined,
  nowMs: number,
): { order: KeyOrder; after: KeyPosition | undefined } {
  const field = fieldOf(sort);
  const descending = sort.startsWith('-');
  if (sort === 'createdAt') {
    const position = positionAfter(cursor);
    return {
      order: { field, descending },
      after: position && { value: position.at, id: position.id },
    };
  }
  const fresh = field === 'requests24h' ? new Date(windowAt('hour', nowMs - DAY_MS).start) : undefined;
  if (cursor === undefined) return { order: { field, descending, since: fresh }, after: undefined };
  const match = /^[A-Za-z0-9_-]{1,400}$/.test(cursor)
    ? SORTED_CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
    : null;
  const since = match?.[2] === undefined ? undefined : new Date(Number(match[2]));
  const position = match && { value: match[3] === 'null' ? null : Number(match[3]), id: match[4]! };
  const valid =
    match !== null &&
    match[1] === sort &&
    (since === undefined) === (field !== 'requests24h') &&
    (position!.value !== null || field === 'lastUsedAt') &&
    encodeSorted(sort, since, position!) === cursor;
  if (!valid) throw new AppError('invalid_cursor');
  return { order: { field, descending, since }, after: position! };
}

/** The cursor of the page after `last`. */
export function keyListCursor(sort: KeySort, order: KeyOrder, last: ListedKey): string {
  if (sort === 'createdAt') return encodeCursor({ at: last.createdAt.getTime(), id: last.id });
  return encodeSorted(sort, order.since, { value: last.sortValue, id: last.id });
}
