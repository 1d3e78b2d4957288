/**
 * The origins a web page may call from (docs/guides/browser.md): a route's CORS policy and a key's
 * `allowedOrigins` name them the same way, `*` (any; routes only), an exact origin
 * (`https://app.example.com`, `http://localhost:5173`) or a wildcard subdomain
 * (`https://*.example.com`: any host under example.com, not example.com itself). Pure: the management
 * API validates them with `ORIGIN_PATTERN` and `spansPublicSuffix`, the proxy matches with
 * `originMatcher`.
 */
import { parse } from 'tldts';

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
/** An exact origin or a wildcard subdomain, scheme http(s), optional port, lower case. */
export const ORIGIN_PATTERN = `^https?://(?:\\*\\.)?${LABEL}(?:\\.${LABEL})*(?::[0-9]{1,5})?$`;
/** A host under a wildcard: one label or more. */
const SUBDOMAIN = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/**
 * Whether a wildcard (`https://*.co.uk`) spans a public suffix by the Public Suffix List, its private
 * section included (`*.github.io`): anyone may register a site under it. A suffix the list does not
 * name (`*.localhost`, `*.internal`) is one's own network's.
 */
export function spansPublicSuffix(pattern: string): boolean {
  const star = pattern.indexOf('://*.');
  if (star < 0) return false;
  const host = pattern
    .slice(star + 5)
    .replace(/:[0-9]+$/, '')
    .toLowerCase();
  const { publicSuffix, isIcann, isPrivate } = parse(host, { allowPrivateDomains: true });
  return publicSuffix === host && (isIcann === true || isPrivate === true);
}

/** Whether `origin` (an Origin header's value) is one of the patterns it was built from. */
export type OriginMatcher = (origin: string) => boolean;

/** The matcher of `patterns` (in ORIGIN_PATTERN's forms, or `*`); built once, off the request path. */
export function originMatcher(patterns: readonly string[]): OriginMatcher {
  if (patterns.includes('*')) return () => true;
  const exact = new Set<string>();
  const wildcards: { readonly scheme: string; readonly suffix: string }[] = [];
  for (const pattern of patterns) {
    const lower = pattern.toLowerCase();
    const star = lower.indexOf('://*.');
    if (star < 0) exact.add(lower);
    // `https://*.example.com:8443`: `https://`, then one label or more, then `.example.com:8443`.
    else wildcards.push({ scheme: lower.slice(0, star + 3), suffix: lower.slice(star + 4) });
  }
  return (origin) => {
    const lower = origin.toLowerCase();
    if (exact.has(lower)) return true;
    return wildcards.some(
      ({ scheme, suffix }) =>
        lower.startsWith(scheme) &&
        lower.endsWith(suffix) &&
        SUBDOMAIN.test(lower.slice(scheme.length, lower.length - suffix.length)),
    );
  };
}

/** The origin a Referer names (`https://app.example.com/page?q` → `https://app.example.com`); undefined for none. */
export function refererOrigin(referer: string | undefined): string | undefined {
  if (referer === undefined) return undefined;
  const origin = URL.parse(referer)?.origin;
  return origin === undefined || origin === 'null' ? undefined : origin;
}
