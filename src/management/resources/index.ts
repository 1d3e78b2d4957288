/**
 * Every management operation, resource by resource (each folder lists its own in operations.ts), in
 * the order the OpenAPI document shows them: the one list the routes, validators, 405 answers, scope
 * table, document and generated API types are derived from. An operation added to a resource's list
 * is in all of them; a new resource adds one line here (docs/decisions/0067).
 */
import type { Operation } from '../operation.js';
import { adminTokenOperations } from './admin-tokens/operations.js';
import { auditLogOperations } from './audit-log/operations.js';
import { consumerOperations } from './consumers/operations.js';
import { creditOperations } from './credits/operations.js';
import { failureOperations } from './failures/operations.js';
import { billingExportOperations } from './billing-exports/operations.js';
import { keyLookupOperations } from './key-lookup/operations.js';
import { keyOperations } from './keys/operations.js';
import { leakOperations } from './leaks/operations.js';
import { planOperations } from './plans/operations.js';
import { portalOperations } from './developer-portal/operations.js';
import { routeOperations } from './routes/operations.js';
import { usageOperations } from './usage/operations.js';
import { verifyOperations } from './verify/operations.js';
import { webhookOperations } from './webhooks/operations.js';
import { whoamiOperations } from './whoami/operations.js';

export const OPERATIONS: readonly Operation[] = [
  ...keyOperations,
  ...keyLookupOperations,
  ...leakOperations,
  ...verifyOperations,
  ...planOperations,
  ...consumerOperations,
  ...creditOperations,
  ...routeOperations,
  ...usageOperations,
  ...failureOperations,
  ...adminTokenOperations,
  ...whoamiOperations,
  ...auditLogOperations,
  ...billingExportOperations,
  ...webhookOperations,
  ...portalOperations,
];

/** The one root of the surfaces that are about neither one key nor one plan (console, usage, audit…). */
export const TOLLGATE_ROOT = '/tollgate';

/** Every management path, once each (`:name` stands for one non-empty segment). */
export const MANAGEMENT_PATHS: readonly string[] = [
  ...new Set(OPERATIONS.map((operation) => operation.path)),
];
