/**
 * Every management operation, in the order the OpenAPI document lists them. Adding an operation here
 * registers its route, its validators, its 405 answers, its scope and its place in the document and
 * in the console's typed client.
 */
import type { Operation } from '../operation.js';
import { adminTokenOperations } from './admin-tokens/operations.js';
import { auditLogOperations } from './audit-log/operations.js';
import { consumerOperations } from './consumers/operations.js';
import { creditOperations } from './credits/operations.js';
import { billingExportOperations } from './billing-exports/operations.js';
import { keyLookupOperations } from './key-lookup/operations.js';
import { keyOperations } from './keys/operations.js';
import { planOperations } from './plans/operations.js';
import { routeOperations } from './routes/operations.js';
import { usageOperations } from './usage/operations.js';
import { verifyOperations } from './verify/operations.js';
import { webhookOperations } from './webhooks/operations.js';
import { whoamiOperations } from './whoami/operations.js';

export const OPERATIONS: readonly Operation[] = [
  ...keyOperations,
  ...keyLookupOperations,
  ...verifyOperations,
  ...planOperations,
  ...consumerOperations,
  ...creditOperations,
  ...routeOperations,
  ...usageOperations,
  ...adminTokenOperations,
  ...whoamiOperations,
  ...auditLogOperations,
  ...billingExportOperations,
  ...webhookOperations,
];

/** The one root of the surfaces that are about neither one key nor one plan (console, usage, audit…). */
export const TOLLGATE_ROOT = '/tollgate';

/** Every management path, once each (`:name` stands for one non-empty segment). */
export const MANAGEMENT_PATHS: readonly string[] = [
  ...new Set(OPERATIONS.map((operation) => operation.path)),
];
