/**
 * The management API's shapes, from the OpenAPI document the server publishes (generated from the
 * operations' one definition), so the console cannot drift from the API. Types only.
 */
import type { components } from './api-types';

type Schemas = components['schemas'];

export type ErrorBody = Schemas['Error'];

export type KeyDetail = Schemas['KeyDetailResponse'];
/** A key's latest leak report (docs/guides/leaked-keys.md). */
export type KeyLeak = NonNullable<KeyDetail['leak']>;
export type ListKeysResponse = Schemas['ListKeysResponse'];
export type KeySummary = ListKeysResponse['apiKeys'][number];
export type RollKeyResponse = Schemas['RollKeyResponse'];
export type KeyLookup = Schemas['LookupKeyResponse'];
/** What is left of one limit of a key's plan now. */
export type LimitState = NonNullable<KeyDetail['usage']['rateLimits']>['limits'][number];

export type KeyUsageResponse = Schemas['KeyUsageResponse'];
export type UsageBucket = KeyUsageResponse['buckets'][number];

/** One entry of the failure log. */
export type Failure = Schemas['FailuresResponse']['failures'][number];

export type AuditLogResponse = Schemas['AuditLogResponse'];
export type AuditEntry = AuditLogResponse['auditLog'][number];

export type Plan = Schemas['PlanResponse'];
/** One limit of a plan as the API answers it: named (default: its period), and its algorithm. */
export type PlanLimit = Plan['limits'][number];
/** A limit's period (a concurrency limit has none: null). */
export type Period = NonNullable<PlanLimit['period']>;
export type Algorithm = PlanLimit['algorithm'];
export type Per = PlanLimit['per'];
/** One cost rule of a plan: what a matching request charges. */
export type PlanCost = NonNullable<Plan['costs']>[number];
/** Which requests a limit or a cost applies to. */
export type RequestMatch = NonNullable<PlanLimit['match']>;
/** One limit as the console sends it: name, algorithm, burst, match and per may be left to their defaults. */
export type PlanLimitInput = Pick<PlanLimit, 'limit' | 'period'> &
  Partial<Pick<PlanLimit, 'name' | 'algorithm' | 'burst' | 'match' | 'per'>>;

export type Consumer = Schemas['Consumer'];
export type ConsumerDetail = Schemas['ConsumerDetailResponse'];
/** A key's or a consumer's prepaid balance (docs/guides/credits.md); `credits: null` where it holds none. */
export type Credits = NonNullable<KeyDetail['credits']>;
export type CreditRefill = NonNullable<Credits['refill']>;
export type AdminToken = Schemas['ListAdminTokensResponse']['adminTokens'][number];
export type CreatedAdminToken = Schemas['CreateAdminTokenResponse'];
export type AdminScope = AdminToken['scopes'][number];
export type Whoami = Schemas['WhoamiResponse'];
export type GatewayRoute = Schemas['Route'];
export type RouteMethod = NonNullable<GatewayRoute['match']['methods']>[number];
export type Webhook = Schemas['Webhook'];
export type CreatedWebhook = Schemas['CreateWebhookResponse'];
export type WebhookEvent = Webhook['events'][number];
export type Delivery = Schemas['Delivery'];
export type BillingExport = Schemas['BillingExport'];
export type PortalSettings = Schemas['PortalSettings'];
export type UpdatePortalSettings = Schemas['UpdatePortalSettingsRequest'];
export type PortalSession = Schemas['ListPortalSessionsResponse']['sessions'][number];
export type CreatedPortalSession = Schemas['CreatePortalSessionResponse'];
