import type { CorsPolicy } from './cors-policy.js';

/**
 * A route of the route table (docs/guides/routes.md): which requests it takes (`match`) and where it
 * sends them. Pure: the management API validates and stores routes, the proxy matches them.
 */

/** The methods a route may name; a route without `methods` takes every method. */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface RouteMatch {
  /** `api.example.com` (exact) or `*.example.com` (any host under it), lower case; null: every host. */
  readonly host: string | null;
  /** `/` or whole segments, `/v1/search`: the request path is it, or starts with it and a `/`. */
  readonly pathPrefix: string;
  /** null: every method. */
  readonly methods: readonly HttpMethod[] | null;
  /** `pathPrefix` compared without regard to ASCII case (a backend that routes so, as Express does). */
  readonly caseInsensitive: boolean;
}

export interface RouteConfig {
  readonly routeId: string;
  readonly match: RouteMatch;
  /** http(s), no query or fragment; its path is prefixed to every forwarded path, as UPSTREAM_URL's. */
  readonly upstreamUrl: string;
  /** Removes `pathPrefix` from the forwarded path. */
  readonly stripPrefix: boolean;
  /** Backend answer deadline; null: UPSTREAM_TIMEOUT_MS. */
  readonly timeoutMs: number | null;
  /** Which web pages may read its answers; null: no policy (a preflight is forwarded like any request). */
  readonly cors: CorsPolicy | null;
}

/** `*.example.com`: a wildcard host, matching any host that ends in `.example.com`. */
export const isWildcardHost = (host: string): boolean => host.startsWith('*.');

/**
 * Two matches some request could take both: the same host (or both without one), the same path prefix
 * (without regard to case when either's is), and a method both take. The table refuses the second
 * (409 `route_exists`).
 */
export function overlaps(a: RouteMatch, b: RouteMatch): boolean {
  if (a.host !== b.host) return false;
  const samePrefix =
    a.caseInsensitive || b.caseInsensitive
      ? asciiLowerCase(a.pathPrefix) === asciiLowerCase(b.pathPrefix)
      : a.pathPrefix === b.pathPrefix;
  if (!samePrefix) return false;
  if (a.methods === null || b.methods === null) return true;
  return a.methods.some((method) => b.methods!.includes(method));
}

/**
 * `text` with A-Z lowered, nothing else: unlike `toLowerCase`, never a longer string (`İ`) nor a
 * letter outside ASCII taken for one (`K`, the Kelvin sign, for `k`). The same string when it has no capital.
 */
export function asciiLowerCase(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 65 && code <= 90) return text.replace(/[A-Z]+/g, (capitals) => capitals.toLowerCase());
  }
  return text;
}

/**
 * The host a request names, as routes compare it: lower case, without port or trailing dot.
 * `undefined` when it names none.
 */
export function requestHost(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  let end = header.length;
  if (header.charCodeAt(0) === 91 /* [ */) {
    end = header.indexOf(']') + 1 || end;
  } else {
    const colon = header.lastIndexOf(':');
    if (colon !== -1) end = colon;
  }
  if (header.charCodeAt(end - 1) === 46 /* . */) end--;
  return header.slice(0, end).toLowerCase();
}
