/**
 * The management routes, shared by the Express app, the OpenAPI document and `isManagementPath` in
 * src/server.ts, which sends exactly these paths (a `:param` is one non-empty segment; no trailing
 * slash) and everything under TOLLGATE_ROOT to the management app: adding a route here routes it.
 */
export const PATHS = {
  createKey: '/consumer-api-key/create',
  keys: '/consumer-api-key',
  key: '/consumer-api-key/:consumerApiKeyId',
  createPlan: '/rate-limit/create',
  applyPlan: '/api-keys/apply-rate-limit',
} as const;

/** The one root of the surfaces that are about neither one key nor one plan (console, usage, audit…). */
export const TOLLGATE_ROOT = '/tollgate';
