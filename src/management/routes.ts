/**
 * The management routes, shared by the Express app, the OpenAPI document and `isManagementPath` in
 * src/server.ts, which sends exactly these paths (a `:param` is one non-empty segment; no trailing
 * slash) and everything under TOLLGATE_ROOT to the management app: adding a route here routes it.
 */
export const PATHS = {
  createKey: '/consumer-api-key/create',
  keys: '/consumer-api-key',
  key: '/consumer-api-key/:consumerApiKeyId',
  rollKey: '/consumer-api-key/:consumerApiKeyId/roll',
  createPlan: '/rate-limit/create',
  plans: '/rate-limit',
  plan: '/rate-limit/:rateLimitId',
  applyPlan: '/api-keys/apply-rate-limit',
  removePlan: '/api-keys/remove-rate-limit',
  adminTokens: '/tollgate/admin-tokens',
  adminToken: '/tollgate/admin-tokens/:tokenId',
  auditLog: '/tollgate/audit-log',
} as const;

/** The one root of the surfaces that are about neither one key nor one plan (console, usage, audit…). */
export const TOLLGATE_ROOT = '/tollgate';
