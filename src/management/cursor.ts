/**
 * List cursors: opaque to clients, but only base64url of `v1:<seq>` inside, where `seq` is the last
 * key of the previous page. A versioned, canonical encoding lets the format change later and makes
 * every other string (including re-encodings of the same value) an invalid cursor.
 */
const PREFIX = 'v1:';

export function encodeCursor(seq: number): string {
  return Buffer.from(PREFIX + seq, 'utf8').toString('base64url');
}

/** The `seq` to continue after, or `undefined` when the text is not a cursor this service issued. */
export function decodeCursor(cursor: string): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^v1:(0|[1-9][0-9]{0,15})$/.exec(text);
  if (!match) return undefined;
  const seq = Number(match[1]);
  if (!Number.isSafeInteger(seq) || encodeCursor(seq) !== cursor) return undefined;
  return seq;
}
