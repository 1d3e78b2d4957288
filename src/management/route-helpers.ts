/** Small pieces every management route file uses: method refusals, path ids, pages and optional bodies. */
import type { RequestHandler } from 'express';
import { AppError } from '../errors.js';
import type { ListPosition } from '../store/key-repository.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { jsonBody } from './json-body.js';
import { DEFAULT_PAGE_SIZE, KEY_ID_PATTERN, MAX_KEY_ID_LENGTH } from './schemas.js';

const KEY_ID = new RegExp(KEY_ID_PATTERN);

/** A path id that cannot name a key is answered without a query (and can't upset the database). */
export function canBeKeyId(id: string): boolean {
  return id.length <= MAX_KEY_ID_LENGTH && KEY_ID.test(id);
}

export function methodNotAllowed(allow: string): RequestHandler {
  return (_req, res, next) => {
    res.set('Allow', allow);
    next(new AppError('method_not_allowed', `Method not allowed on this route (allowed: ${allow})`));
  };
}

/**
 * A list query checked by `validate`, with its cursor decoded. Errors about `cursor` alone are
 * `invalid_cursor`; anything else about the query is `validation_failed`.
 */
export function pageQuery<Q extends { limit?: number; cursor?: string }>(
  validate: (query: unknown) => Q,
  query: Record<string, unknown>,
): Q & { after: ListPosition | undefined; limit: number } {
  let parsed: Q;
  try {
    parsed = validate({ ...query });
  } catch (err) {
    if (err instanceof AppError && err.details?.every((d) => (d as { field?: string }).field === 'cursor')) {
      throw new AppError('invalid_cursor');
    }
    throw err;
  }
  let after: ListPosition | undefined;
  if (parsed.cursor !== undefined) {
    after = decodeCursor(parsed.cursor);
    if (after === undefined) throw new AppError('invalid_cursor');
  }
  return { ...parsed, after, limit: parsed.limit ?? DEFAULT_PAGE_SIZE };
}

/**
 * One page of `rows` fetched with one row more than `limit`: the extra row says whether another page
 * exists without a count query.
 */
export function page<T>(rows: T[], limit: number, positionOf: (row: T) => ListPosition): { items: T[]; nextCursor?: string } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return rows.length > limit && last ? { items, nextCursor: encodeCursor(positionOf(last)) } : { items };
}

/** A body that may be left out entirely (no Content-Type, no content): read as `{}`; otherwise JSON as usual. */
export const optionalJsonBody: RequestHandler = (req, res, next) => {
  const empty =
    req.headers['content-type'] === undefined &&
    req.headers['transfer-encoding'] === undefined &&
    (req.headers['content-length'] ?? '0') === '0';
  if (!empty) {
    jsonBody(req, res, next);
    return;
  }
  req.body = {};
  next();
};
