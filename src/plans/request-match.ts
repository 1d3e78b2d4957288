/**
 * Which requests a limit counts or a cost prices (docs/guides/credits.md, docs/decisions/0034): a request
 * matches when every condition given holds. Pure: the management API validates matches, the admission reads
 * them.
 */
import type { HttpMethod } from './route.js';

export interface RequestMatch {
  /** The request took one of these routes (the catch-all, UPSTREAM_URL, is none of them). */
  readonly routeIds?: readonly string[];
  readonly methods?: readonly HttpMethod[];
  /** `/` or whole segments, as a route's: the path is it, or starts with it and a `/`. */
  readonly pathPrefix?: string;
}

/** What a match reads of a request. */
export interface RequestFacts {
  /** The route it takes; null: the catch-all. */
  readonly routeId: string | null;
  readonly method: string;
  /** As sent, without the query. */
  readonly path: string;
}

export function matches(match: RequestMatch, request: RequestFacts): boolean {
  const { routeIds, methods, pathPrefix } = match;
  if (routeIds !== undefined && (request.routeId === null || !routeIds.includes(request.routeId)))
    return false;
  if (methods !== undefined && !(methods as readonly string[]).includes(request.method)) return false;
  return pathPrefix === undefined || isUnderPrefix(request.path, pathPrefix);
}

/** `/v1` takes `/v1`, `/v1/` and `/v1/items`, never `/v10`; `/` takes every path. */
export function isUnderPrefix(path: string, prefix: string): boolean {
  if (prefix === '/') return true;
  return (
    path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 47) // '/'
  );
}
