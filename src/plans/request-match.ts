/**
 * Which requests a limit counts or a cost prices (docs/guides/credits.md, docs/decisions/0034): a request
 * matches when every condition given holds. Pure: the management API validates matches, the admission reads
 * them.
 */
import { normalisedPath } from './normalised-path.js';
import type { HttpMethod } from './route.js';
import { bodyMatches, bodyMatchOf } from './body-match.js';
import type { BodyMatchRule } from './usage-pricing.js';

export interface RequestMatch {
  /** The request took one of these routes (the catch-all, UPSTREAM_URL, is none of them). */
  readonly routeIds?: readonly string[];
  readonly methods?: readonly HttpMethod[];
  /** `/` or whole segments, as a route's: the path is it, or starts with it and a `/`. */
  readonly pathPrefix?: string;
  /** Compares `pathPrefix` without regard to ASCII case, for a backend that routes so. Default false. */
  readonly caseInsensitive?: boolean;
  /** The request's JSON body holds one of the values at the pointer (read by src/metering/body-match.ts). */
  readonly body?: BodyMatchRule;
}

/** What a match reads of a request. */
export interface RequestFacts {
  /** The route it takes; null: the catch-all. */
  readonly routeId: string | null;
  readonly method: string;
  /** Normalised (normalised-path.ts), without the query. */
  readonly path: string;
  /** Its JSON body, parsed, when it was read (only for plans that match or reserve on it); else undefined. */
  readonly body?: unknown;
}

export function matches(match: RequestMatch, request: RequestFacts): boolean {
  if (!matchesBeside(match, request)) return false;
  if (match.body === undefined) return true;
  const body = bodyMatchOf(match.body);
  return body !== undefined && bodyMatches(request.body, body);
}

/** Whether every condition of `match` but `body` holds: a request whose body may then decide is read. */
export function matchesBeside(match: RequestMatch, request: RequestFacts): boolean {
  const { routeIds, methods, pathPrefix, caseInsensitive = false } = match;
  if (routeIds !== undefined && (request.routeId === null || !routeIds.includes(request.routeId)))
    return false;
  if (methods !== undefined && !(methods as readonly string[]).includes(request.method)) return false;
  return pathPrefix === undefined || isUnderPrefix(request.path, pathPrefix, caseInsensitive);
}

/**
 * `/v1` takes `/v1`, `/v1/` and `/v1/items`, never `/v10`; `/` takes every path. `caseInsensitive`:
 * `/v1` also takes `/V1/items`.
 */
export function isUnderPrefix(path: string, prefix: string, caseInsensitive = false): boolean {
  if (prefix === '/') return true;
  const starts = caseInsensitive ? startsWithIgnoringCase(path, prefix) : path.startsWith(prefix);
  return starts && (path.length === prefix.length || path.charCodeAt(prefix.length) === 47); // '/'
}

/** Whether `path` starts with `prefix`, A-Z and a-z taken as one; allocates nothing. */
function startsWithIgnoringCase(path: string, prefix: string): boolean {
  if (path.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    const a = path.charCodeAt(i);
    const b = prefix.charCodeAt(i);
    // Setting bit 0x20 lowers an ASCII capital; only letters may be equal so.
    if (a !== b && ((a | 0x20) !== (b | 0x20) || (a | 0x20) < 97 || (a | 0x20) > 122)) return false;
  }
  return true;
}

/** A match with its path prefix in normal form, as request paths are compared (stored ones may predate it). */
export function normalisedMatch<M extends RequestMatch>(match: M): M {
  const prefix = match.pathPrefix;
  if (prefix === undefined) return match;
  const normal = normalisedPath(prefix);
  return normal === prefix ? match : { ...match, pathPrefix: normal };
}
