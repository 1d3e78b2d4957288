/**
 * A route's CORS policy (docs/guides/browser.md, docs/guides/routes.md): which web pages may read its
 * answers. Pure: stored with the route, compiled by the proxy (src/proxy/cors.ts).
 */
export interface CorsPolicy {
  /** `*`, exact origins or wildcard subdomains (src/plans/origins.ts). */
  readonly allowedOrigins: readonly string[];
  /** Request headers a page may send besides those every policy allows (see src/proxy/cors.ts). */
  readonly allowedHeaders: readonly string[];
  /** Response headers a page may read besides those every policy exposes. */
  readonly exposedHeaders: readonly string[];
  /** Pages may send cookies and HTTP authentication (`Access-Control-Allow-Credentials: true`). */
  readonly allowCredentials: boolean;
  /** How long a browser may keep a preflight's answer. */
  readonly maxAgeSeconds: number;
}

export const DEFAULT_CORS_MAX_AGE_SECONDS = 600;

/** The policy with its defaults filled in, from the fields a caller gave. */
export function corsPolicyOf(input: {
  readonly allowedOrigins: readonly string[];
  readonly allowedHeaders?: readonly string[];
  readonly exposedHeaders?: readonly string[];
  readonly allowCredentials?: boolean;
  readonly maxAgeSeconds?: number;
}): CorsPolicy {
  return {
    allowedOrigins: [...input.allowedOrigins],
    allowedHeaders: [...(input.allowedHeaders ?? [])],
    exposedHeaders: [...(input.exposedHeaders ?? [])],
    allowCredentials: input.allowCredentials ?? false,
    maxAgeSeconds: input.maxAgeSeconds ?? DEFAULT_CORS_MAX_AGE_SECONDS,
  };
}
