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
  keyUsage: '/consumer-api-key/:consumerApiKeyId/usage',
  createPlan: '/rate-limit/create',
  plans: '/rate-limit',
  plan: '/rate-limit/:rateLimitId',
  applyPlan: '/api-keys/apply-rate-limit',
  removePlan: '/api-keys/remove-rate-limit',
  adminTokens: '/tollgate/admin-tokens',
  adminToken: '/tollgate/admin-tokens/:tokenId',
  auditLog: '/tollgate/audit-log',
  fleetUsage: '/tollgate/usage',
} as const;

import type { Scope } from './scopes.js';

/**
 * The scope each operation needs (contract section 9), by route and method: the routes require it
 * and the OpenAPI document states it, from this one table.
 */
export const REQUIRED_SCOPES = {
  createKey: { post: 'keys:write' },
  keys: { get: 'keys:read' },
  key: { get: 'keys:read', patch: 'keys:write', delete: 'keys:write' },
  rollKey: { post: 'keys:write' },
  keyUsage: { get: 'usage:read' },
  createPlan: { post: 'plans:write' },
  plans: { get: 'plans:read' },
  plan: { get: 'plans:read', patch: 'plans:write', delete: 'plans:write' },
  applyPlan: { post: 'keys:write' },
  removePlan: { post: 'keys:write' },
  adminTokens: { get: 'tokens:write', post: 'tokens:write' },
  adminToken: { delete: 'tokens:write' },
  auditLog: { get: 'audit:read' },
  fleetUsage: { get: 'usage:read' },
} as const satisfies Record<keyof typeof PATHS, Partial<Record<'get' | 'post' | 'patch' | 'delete', Scope>>>;

/** The one root of the surfaces that are about neither one key nor one plan (console, usage, audit…). */
export const TOLLGATE_ROOT = '/tollgate';
