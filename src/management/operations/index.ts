/**
 * Every management operation, in the order the OpenAPI document lists them. Adding an operation here
 * registers its route, its validators, its 405 answers, its scope and its place in the document and
 * in the console's typed client.
 */
import type { Operation } from '../operation.js';
import { adminTokenOperations } from './admin-tokens.js';
import { auditLogOperations } from './audit-log.js';
import { consumerOperations } from './consumers.js';
import { creditOperations } from './credits.js';
import { billingExportOperations } from './billing-exports.js';
import { keyLookupOperations } from './key-lookup.js';
import { keyOperations } from './keys.js';
import { planOperations } from './plans.js';
import { routeOperations } from './routes.js';
import { usageOperations } from './usage.js';
import { verifyOperations } from './verify.js';
import { webhookOperations } from './webhooks.js';
import { whoamiOperations } from './whoami.js';

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
