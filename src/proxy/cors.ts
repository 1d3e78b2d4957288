/**
 * A route's CORS policy on the request path (docs/guides/browser.md, decision record 0082): the
 * answers to preflights, which Tollgate gives itself (no key, never forwarded, charged to nobody),
 * and the headers that let a page of an allowed origin read every answer, the backend's or
 * Tollgate's own. Compiled once per route when the table changes; a request without `Origin` never
 * gets here.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { CorsPolicy } from '../plans/cors-policy.js';
import { originMatcher, type OriginMatcher } from '../plans/origins.js';
import type { HttpMethod } from '../plans/route.js';

/** Request headers every policy lets a page send: the two credentials, JSON bodies, the customer id. */
const ALWAYS_ALLOWED_HEADERS = ['authorization', 'x-api-key', 'content-type'];
/** Response headers every policy lets a page read: the limit's state, when to retry, the request id. */
const ALWAYS_EXPOSED_HEADERS = ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-request-id'];
/** The methods a preflight names as allowed on a route that takes every method. */
const EVERY_METHOD = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

/** A policy as the proxy applies it: the header values are joined once, here. */
export interface CorsRule {
  readonly allows: OriginMatcher;
  /** Answer `Access-Control-Allow-Origin: *`: the policy holds `*` and credentials are off. */
  readonly star: boolean;
  readonly credentials: boolean;
  readonly allowMethods: string;
  readonly allowHeaders: string;
  readonly exposeHeaders: string;
  readonly maxAge: string;
}

const unique = (names: readonly string[]): string =>
  [...new Set(names.map((name) => name.toLowerCase()))].join(', ');

/** The rule of a route's policy; `methods`: the route's (null: every method). */
export function corsRuleOf(
  policy: CorsPolicy,
  methods: readonly HttpMethod[] | null,
  customerIdHeader: string,
): CorsRule {
  return {
    allows: originMatcher(policy.allowedOrigins),
    star: policy.allowedOrigins.includes('*') && !policy.allowCredentials,
    credentials: policy.allowCredentials,
    allowMethods: methods === null ? EVERY_METHOD : methods.join(', '),
    allowHeaders: unique([...ALWAYS_ALLOWED_HEADERS, customerIdHeader, ...policy.allowedHeaders]),
    exposeHeaders: unique([...ALWAYS_EXPOSED_HEADERS, ...policy.exposedHeaders]),
    maxAge: String(policy.maxAgeSeconds),
  };
}

/** A browser's preflight: `OPTIONS` naming the method the page means to send. */
export const isPreflight = (method: string | undefined, headers: IncomingHttpHeaders): boolean =>
  method === 'OPTIONS' && headers['access-control-request-method'] !== undefined;

/**
 * The headers that let a page of `origin` read an answer, as `[name, value, …]`; just `Vary: Origin`
 * when the rule does not allow it (the answer differs by origin either way).
 */
export function corsHeaders(rule: CorsRule, origin: string): string[] {
  if (!rule.allows(origin)) return ['vary', 'Origin'];
  const headers = [
    'access-control-allow-origin',
    rule.star ? '*' : origin,
    'vary',
    'Origin',
    'access-control-expose-headers',
    rule.exposeHeaders,
  ];
  if (rule.credentials) headers.push('access-control-allow-credentials', 'true');
  return headers;
}

/** Adds `[name, value, …]` to a header object (Tollgate's own answers). */
export function addHeaders(into: OutgoingHttpHeaders, headers: readonly string[]): void {
  for (let i = 0; i < headers.length; i += 2) into[headers[i]!] = headers[i + 1]!;
}

/**
 * Tollgate's answer to a preflight: 204, with the `Access-Control-Allow-*` headers when the rule
 * allows `origin`, without them otherwise (the browser then refuses the page's request itself).
 */
export function preflightAnswer(
  rule: CorsRule,
  origin: string,
  requestId: string,
): { readonly status: 204; readonly headers: OutgoingHttpHeaders; readonly body: '' } {
  const headers: OutgoingHttpHeaders = { 'x-request-id': requestId, vary: 'Origin' };
  if (rule.allows(origin)) {
    headers['access-control-allow-origin'] = rule.star ? '*' : origin;
    headers['access-control-allow-methods'] = rule.allowMethods;
    headers['access-control-allow-headers'] = rule.allowHeaders;
    headers['access-control-max-age'] = rule.maxAge;
    if (rule.credentials) headers['access-control-allow-credentials'] = 'true';
  }
  headers['content-length'] = 0;
  return { status: 204, headers, body: '' };
}

/** A backend's head (`[name, value, …]`) without its own `Access-Control-*` headers: Tollgate's replace them. */
export function withoutBackendCors(headers: string[]): string[] {
  let kept = 0;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase().startsWith('access-control-')) continue;
    headers[kept++] = headers[i]!;
    headers[kept++] = headers[i + 1]!;
  }
  headers.length = kept;
  return headers;
}
