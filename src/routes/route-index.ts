/**
 * The route table as the hot path reads it: built once per change of the table, then asked once per
 * request. A match costs one map look-up per path segment in each host bucket the request's host can
 * fall in (its exact host, each wildcard suffix of it, the routes for every host), whatever the number
 * of routes: no scan per request. A bucket keeps its case-insensitive routes in a second tree, keyed in
 * lower case, which a request walks with its path lowered: still one look-up per segment.
 */
import { asciiLowerCase, isWildcardHost, requestHost, type RouteMatch } from '../plans/route.js';

/** One path segment of a prefix tree, with the routes whose prefix ends here. */
interface Node<T> {
  children: Map<string, Node<T>> | undefined;
  /** The route taking every method here. */
  any: T | undefined;
  /** The routes taking some methods here: at most one per method. */
  byMethod: Map<string, T> | undefined;
}

/** The best route found so far in one match: the deepest prefix, then the first (most specific) host. */
interface Best<T> {
  depth: number;
  value: T | undefined;
}

const node = <T>(): Node<T> => ({ children: undefined, any: undefined, byMethod: undefined });

/** Routes by path prefix, one tree level per segment. */
class PrefixTree<T> {
  private readonly root: Node<T> = node();

  /** `prefix`: the route's, in lower case for the case-insensitive tree. */
  add(prefix: string, match: RouteMatch, value: T): void {
    let at = this.root;
    if (prefix !== '/') {
      for (const segment of prefix.slice(1).split('/')) {
        at.children ??= new Map();
        let child = at.children.get(segment);
        if (child === undefined) at.children.set(segment, (child = node()));
        at = child;
      }
    }
    if (match.methods === null) {
      at.any ??= value;
      return;
    }
    at.byMethod ??= new Map();
    for (const method of match.methods) if (!at.byMethod.has(method)) at.byMethod.set(method, value);
  }

  /** Records in `best` the route of the longest prefix of `path` that takes `method`, if longer than best's. */
  longest(path: string, method: string, best: Best<T>): void {
    let at = this.root;
    let depth = 0;
    let start = 1;
    for (;;) {
      const found = at.byMethod?.get(method) ?? at.any;
      if (found !== undefined && depth > best.depth) {
        best.depth = depth;
        best.value = found;
      }
      const children = at.children;
      if (children === undefined || start > path.length) return;
      let end = path.indexOf('/', start);
      if (end === -1) end = path.length;
      const child = children.get(path.slice(start, end));
      if (child === undefined) return;
      at = child;
      depth++;
      start = end + 1;
    }
  }
}

/** The routes of one host bucket: those compared as written, and those compared without case. */
class HostBucket<T> {
  private readonly exact = new PrefixTree<T>();
  private folded: PrefixTree<T> | undefined;

  /** Adds a route; of two that overlap (the table refuses them) the first added stays. */
  add(match: RouteMatch, value: T): void {
    if (match.caseInsensitive)
      (this.folded ??= new PrefixTree()).add(asciiLowerCase(match.pathPrefix), match, value);
    else this.exact.add(match.pathPrefix, match, value);
  }

  /** Records in `best` the route of the longest prefix of `path` that takes `method`, if longer than best's. */
  longest(path: string, method: string, best: Best<T>): void {
    this.exact.longest(path, method, best);
    this.folded?.longest(asciiLowerCase(path), method, best);
  }
}

export interface RouteIndex<T> {
  /**
   * The value of the route for a request (its `Host` header as sent, its method, its path without
   * query in normal form, plans/normalised-path.ts): the longest path prefix of whole segments, then
   * the most specific host (exact, then the longest wildcard, then routes for every host); else
   * `fallback`.
   */
  match(hostHeader: string | undefined, method: string, path: string): T | undefined;
}

/**
 * The index of `routes` (oldest first: of two that overlap, the older wins; their prefixes in normal
 * form), answering `fallback` when none matches.
 */
export function buildRouteIndex<T>(
  routes: readonly { readonly match: RouteMatch; readonly value: T }[],
  fallback: T | undefined,
): RouteIndex<T> {
  const exact = new Map<string, HostBucket<T>>();
  /** By suffix with its dot: `*.example.com` is under `.example.com`. */
  const wildcard = new Map<string, HostBucket<T>>();
  let anyHost: HostBucket<T> | undefined;
  const bucketOf = (map: Map<string, HostBucket<T>>, key: string) => {
    let bucket = map.get(key);
    if (bucket === undefined) map.set(key, (bucket = new HostBucket()));
    return bucket;
  };
  for (const { match, value } of routes) {
    const host = match.host;
    const bucket =
      host === null
        ? (anyHost ??= new HostBucket())
        : isWildcardHost(host)
          ? bucketOf(wildcard, host.slice(1))
          : bucketOf(exact, host);
    bucket.add(match, value);
  }
  const byHost = exact.size > 0 || wildcard.size > 0;
  // A match runs synchronously to its end: one scratch record serves every call.
  const best: Best<T> = { depth: -1, value: undefined };

  return {
    match(hostHeader, method, path) {
      best.depth = -1;
      best.value = undefined;
      // Most tables route by path alone: their requests' hosts are not even read.
      const host = byHost ? requestHost(hostHeader) : undefined;
      if (host !== undefined) {
        exact.get(host)?.longest(path, method, best);
        if (wildcard.size > 0) {
          // Left to right: the longest suffix, the most specific wildcard, first.
          for (let dot = host.indexOf('.'); dot !== -1; dot = host.indexOf('.', dot + 1)) {
            wildcard.get(host.slice(dot))?.longest(path, method, best);
          }
        }
      }
      anyHost?.longest(path, method, best);
      const found = best.value;
      best.value = undefined;
      return found ?? fallback;
    },
  };
}
