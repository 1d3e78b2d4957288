/**
 * The management routes, shared by the Express app and the OpenAPI document. Which requests reach the
 * app is decided by `isManagementPath` in src/server.ts: these paths exactly, no trailing slash.
 */
export const PATHS = {
  createKey: '/consumer-api-key/create',
  keys: '/consumer-api-key',
  key: '/consumer-api-key/:consumerApiKeyId',
  createPlan: '/rate-limit/create',
  applyPlan: '/api-keys/apply-rate-limit',
} as const;
