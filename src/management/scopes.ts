/**
 * What an admin token may do (docs/guides/admin-tokens-and-audit.md, Scopes). The root token holds every scope.
 * `keys:secrets`: a key's secret in the answers that show a key (a roll answers its new secret to
 * anyone allowed to roll). `billing:read` and `billing:write`: billing exports and their runs (docs/guides/billing-export.md).
 * `keys:verify`: `POST /tollgate/verify`, a decision and its count, and nothing else (docs/guides/verify-and-client.md).
 * `portal:read`/`portal:write`: the developer portal's settings; `portal:sessions`: sign-in links and the sessions they
 * open (docs/guides/portal.md).
 */
export const SCOPES = [
  'keys:read',
  'keys:write',
  'keys:secrets',
  'keys:verify',
  'plans:read',
  'plans:write',
  'routes:read',
  'routes:write',
  'usage:read',
  'audit:read',
  'tokens:write',
  'webhooks:read',
  'webhooks:write',
  'billing:read',
  'billing:write',
  'portal:read',
  'portal:write',
  'portal:sessions',
] as const;
export type Scope = (typeof SCOPES)[number];
