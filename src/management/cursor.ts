/**
 * List cursors: opaque to clients, but only base64url of `v2:<ms>:<id>` inside, the position (creation
 * time in epoch ms, then id) of the last item of the previous page. Lists are ordered by that pair, so a
 * page boundary holds however items were inserted. A versioned, canonical encoding lets the format
 * change later and makes every other string (including re-encodings of the same value) invalid.
 */
import type { ListPosition } from '../store/list-position.js';

const CURSOR = /^v2:(0|[1-9][0-9]{0,15}):([A-Za-z0-9._~:-]{1,128})$/;

export function encodeCursor(position: ListPosition): string {
  return Buffer.from(`v2:${position.at}:${position.id}`, 'utf8').toString('base64url');
}

/**
 * The position to continue after, or `undefined` when the text is not a cursor this service issued;
 * `idPattern` narrows the ids a list can have (the audit log's are sequence numbers).
 */
export function decodeCursor(cursor: string, idPattern?: RegExp): ListPosition | undefined {
  if (!/^[A-Za-z0-9_-]{1,256}$/.test(cursor)) return undefined;
  const match = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match || (idPattern !== undefined && !idPattern.test(match[2]!))) return undefined;
  const position = { at: Number(match[1]), id: match[2]! };
  if (!Number.isSafeInteger(position.at) || encodeCursor(position) !== cursor) return undefined;
  return position;
}
