/**
 * The management API's shapes, taken from the schemas the server validates and documents with, so the
 * console cannot drift from the API. Types only: nothing of the server enters the bundle.
 */
import type { Static } from '@sinclair/typebox';
import type {
  AuditLogResponse,
  CreateKeyResponse,
  ErrorResponse,
  FleetUsageResponse,
  KeyDetailResponse,
  KeyUsageResponse,
  ListKeysResponse,
  ListPlansResponse,
  PlanResponse,
  RollKeyResponse,
} from '../../src/management/schemas.js';
import type { Period } from '../../src/plans/window.js';
import type { components } from './generated/management-api';

export type {
  CreateKeyResponse,
  FleetUsageResponse,
  KeyDetailResponse,
  KeyUsageResponse,
  ListKeysResponse,
  RollKeyResponse,
  Period,
};

export type ErrorBody = Static<typeof ErrorResponse>;
export type KeySummary = ListKeysResponse['apiKeys'][number];
export type UsageBucket = KeyUsageResponse['buckets'][number];
export type AuditEntry = AuditLogResponse['auditLog'][number];
export type { AuditLogResponse };

export type { Algorithm } from '../../src/plans/plan.js';

export type Plan = PlanResponse;
export type PlanList = ListPlansResponse;
/** One limit of a plan as the API answers it: named (default: its period), fixed or sliding. */
export type PlanLimit = Plan['limits'][number];
/** One limit as the console sends it: name and algorithm may be left to their defaults. */
export type PlanLimitInput = Pick<PlanLimit, 'limit' | 'period'> &
  Partial<Pick<PlanLimit, 'name' | 'algorithm'>>;

export type KeyDetail = KeyDetailResponse;
/** What is left of one limit of a key's plan now. */
export type LimitState = NonNullable<KeyDetail['usage']['rateLimits']>['limits'][number];

/** The shapes of the newer APIs, from the OpenAPI document the server publishes. */
type Schemas = components['schemas'];
export type Consumer = Schemas['Consumer'];
export type ConsumerDetail = Schemas['ConsumerDetailResponse'];
export type ConsumerList = Schemas['ListConsumersResponse'];
export type AdminToken = Schemas['ListAdminTokensResponse']['adminTokens'][number];
export type AdminTokenList = Schemas['ListAdminTokensResponse'];
export type CreatedAdminToken = Schemas['CreateAdminTokenResponse'];
export type AdminScope = AdminToken['scopes'][number];
export type GatewayRoute = Schemas['Route'];
export type RouteList = Schemas['ListRoutesResponse'];
export type RouteMethod = NonNullable<GatewayRoute['match']['methods']>[number];
export type Webhook = Schemas['Webhook'];
export type WebhookList = Schemas['ListWebhooksResponse'];
export type CreatedWebhook = Schemas['CreateWebhookResponse'];
export type WebhookEvent = Webhook['events'][number];
export type Delivery = Schemas['Delivery'];
export type DeliveryList = Schemas['ListDeliveriesResponse'];
export type BillingExport = Schemas['BillingExport'];
export type BillingExportList = Schemas['ListBillingExportsResponse'];
export type BillingExportRun = Schemas['BillingExportRun'];
export type BillingExportRunList = Schemas['ListBillingExportRunsResponse'];
