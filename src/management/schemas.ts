/**
 * One TypeBox schema per request and response of the management API: the source of the ajv
 * validators, of the TypeScript types and of the OpenAPI document, so the three cannot drift apart.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { ALGORITHMS, MAX_LIMITS, type Algorithm } from '../limits/plan.js';
import { PERIODS, type Period } from '../limits/window.js';
import { SCOPES, type Scope } from './scopes.js';

// Postgres text cannot hold U+0000; refusing it here keeps such input a 400 instead of a database error.
const NO_NUL = '^[^\\u0000]*$';

export const ISO_TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$';
export const CREATE_TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$';

export const MAX_NAME_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 1000;
export const MAX_KEY_ID_LENGTH = 128;
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 100;

const IsoTimestamp = Type.String({
  format: 'date-time',
  pattern: ISO_TIMESTAMP_PATTERN,
  description: 'UTC, whole seconds: YYYY-MM-DDThh:mm:ssZ',
  examples: ['2026-11-21T14:23:02Z'],
});
const CreateTimestamp = Type.String({
  pattern: CREATE_TIMESTAMP_PATTERN,
  description: 'UTC, whole seconds: YYYY-MM-DD HH:MM:SS (this response only, as the service spec shows it)',
  examples: ['2026-11-21 14:23:02'],
});
const Count = Type.Integer({ minimum: 0 });
const strict = { additionalProperties: false } as const;
/** A timestamp a caller sends: the same shape, checked for a real date by the route (see `parseTimestamp`). */
const IsoTimestampInput = Type.String({ pattern: ISO_TIMESTAMP_PATTERN, description: 'UTC, whole seconds: YYYY-MM-DDThh:mm:ssZ' });
export const MAX_METADATA_BYTES = 8 * 1024;
export const MAX_GRACE_PERIOD_SECONDS = 604_800;

const Name = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  pattern: NO_NUL,
  description: 'Free label, 1-200 characters (U+0000 excluded)',
});
// `*`, not `+`: minLength reports an empty value, so it is named once, not twice.
export const KEY_ID_PATTERN = '^[A-Za-z0-9._~:-]*$';
const KeyId = Type.String({
  minLength: 1,
  maxLength: MAX_KEY_ID_LENGTH,
  pattern: KEY_ID_PATTERN,
  description: 'Identifier of a consumer API key, as returned by create (`id`)',
  examples: ['key_3q2xR0f1bW8mT5nYk9Lp4A'],
});
export const RATE_LIMIT_ID_PATTERN = '^[A-Za-z0-9._:-]*$';
const RateLimitId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: RATE_LIMIT_ID_PATTERN,
  description: 'Chosen by the caller: 1-128 characters of A-Z a-z 0-9 . _ : -',
  examples: ['gold-1000-per-hour'],
});
const PlanLimit = Type.Integer({
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'Requests allowed in one window, 1 to 2^53-1',
});
// An enum rather than a union of literals: one clear error ("must be equal to one of the allowed values").
export const PeriodSchema = Type.Unsafe<Period>({
  type: 'string',
  enum: [...PERIODS],
  description:
    'Window length. Fixed windows are aligned to UTC: second, minute, hour, day (from 00:00), week (from Monday 00:00), month (from the 1st, 00:00), year (from 1 January 00:00). A sliding month is 30 days, a sliding year 365',
});
export const LIMIT_NAME_PATTERN = '^[A-Za-z0-9_-]*$';
const LimitName = Type.String({
  minLength: 1,
  maxLength: 32,
  pattern: LIMIT_NAME_PATTERN,
  description: 'Names the limit in the RateLimit headers and the 429 body: 1-32 characters of A-Z a-z 0-9 _ -, unique within the plan. Default: the period',
  examples: ['burst', 'monthly-quota'],
});
const AlgorithmSchema = Type.Unsafe<Algorithm>({
  type: 'string',
  enum: [...ALGORITHMS],
  description:
    '`fixed` (default): UTC-aligned windows, exactly `limit` per window across replicas. `sliding`: never more than `limit` in any span of one period across replicas; a request may be refused for requests up to one period and a twentieth old (see the README)',
});
const LimitInput = Type.Object(
  { limit: PlanLimit, period: PeriodSchema, name: Type.Optional(LimitName), algorithm: Type.Optional(AlgorithmSchema) },
  { ...strict, title: 'PlanLimitInput' },
);
const LimitsInput = Type.Array(LimitInput, {
  minItems: 1,
  maxItems: MAX_LIMITS,
  description: `1 to ${MAX_LIMITS} limits, all checked and counted for every request; names unique, and no two limits of the same period and algorithm`,
});
const PlanLimitSchema = Type.Object(
  { name: LimitName, limit: PlanLimit, period: PeriodSchema, algorithm: AlgorithmSchema },
  { ...strict, title: 'PlanLimit' },
);
const Secret = Type.String({
  description: 'The consumer API key itself (`Authorization: Bearer <secret>` or `x-api-key: <secret>`)',
  examples: ['tg_3lB0sGm6yq0i3I2xJfN8m0rWbq2cQ8uYd5vZk1eHhTs'],
});


const ExternalId = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  pattern: NO_NUL,
  description: "The owner's id in the caller's system, 1-200 characters",
});
const Metadata = Type.Record(Type.String(), Type.Unknown(), {
  description: `A JSON object of at most ${MAX_METADATA_BYTES} bytes as serialised, returned as given`,
});
const Enabled = Type.Boolean({ description: 'A disabled key is refused with 403 key_disabled, without consuming quota' });
const ExpiresAt = Type.Union([IsoTimestampInput, Type.Null()], {
  description: 'From this instant the key is refused with 401 key_expired; null: never',
});

// ---- requests ----

const keySettings = {
  externalId: Type.Optional(Type.Union([ExternalId, Type.Null()])),
  metadata: Type.Optional(Metadata),
  enabled: Type.Optional(Enabled),
  expiresAt: Type.Optional(ExpiresAt),
};

export const CreateKeyRequest = Type.Object(
  { name: Name, ...keySettings, rateLimitId: Type.Optional(Type.Union([RateLimitId, Type.Null()])) },
  { ...strict, title: 'CreateKeyRequest' },
);

export const UpdateKeyRequest = Type.Object(
  { name: Type.Optional(Name), ...keySettings },
  { ...strict, minProperties: 1, title: 'UpdateKeyRequest', description: 'Any of the fields; null clears externalId and expiresAt' },
);

export const RollKeyRequest = Type.Object(
  {
    gracePeriodSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_GRACE_PERIOD_SECONDS,
        default: 0,
        description:
          'How long the previous secret keeps working, 0-604800 s (7 days): until the first whole second at least this long after the roll (`previousSecretExpiresAt`); 0: refused at once',
      }),
    ),
  },
  { ...strict, title: 'RollKeyRequest' },
);

const pageFields = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      default: DEFAULT_PAGE_SIZE,
      description: 'Page size, 1-1000',
    }),
  ),
  cursor: Type.Optional(Type.String({ description: 'The `nextCursor` of the previous page; opaque' })),
};

export const ListKeysQuery = Type.Object(
  {
    ...pageFields,
    rateLimitId: Type.Optional(RateLimitId),
    enabled: Type.Optional(Type.Boolean({ description: '`true` or `false`' })),
    externalId: Type.Optional(ExternalId),
    namePrefix: Type.Optional({ ...Name, description: 'Keys whose name starts with this text (case-sensitive)' }),
  },
  { ...strict, title: 'ListKeysQuery' },
);

export const ListPlansQuery = Type.Object(pageFields, { ...strict, title: 'ListPlansQuery' });

export const DeletePlanQuery = Type.Object(
  { force: Type.Optional(Type.Boolean({ description: '`true`: unbind the keys bound to the plan, then delete it' })) },
  { ...strict, title: 'DeletePlanQuery' },
);

export const CreatePlanRequest = Type.Object(
  {
    rateLimitId: RateLimitId,
    description: Type.Optional(
      Type.String({
        maxLength: MAX_DESCRIPTION_LENGTH,
        pattern: NO_NUL,
        default: '',
        description: 'Free text, at most 1000 characters',
      }),
    ),
    limit: Type.Optional({ ...PlanLimit, description: 'One limit (with `period`); or send `limits`' }),
    period: Type.Optional(PeriodSchema),
    limits: Type.Optional(LimitsInput),
  },
  { ...strict, title: 'CreatePlanRequest', description: '`limit` and `period` (one fixed limit, as the seed), or `limits`: not both' },
);

export const UpdatePlanRequest = Type.Object(
  {
    // No default here: a change that leaves the description out keeps it.
    description: Type.Optional(Type.String({ maxLength: MAX_DESCRIPTION_LENGTH, pattern: NO_NUL, description: 'Free text, at most 1000 characters' })),
    limit: Type.Optional({ ...PlanLimit, description: 'For a plan of one limit: its new limit' }),
    period: Type.Optional({ ...PeriodSchema, description: 'For a plan of one limit: its new period' }),
    limits: Type.Optional(LimitsInput),
  },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdatePlanRequest',
    description: 'Any of the fields; `limits` replaces every limit and cannot come with `limit` or `period`. The current windows keep what they have spent',
  },
);

export const ApplyPlanRequest = Type.Object(
  { consumerApiKeyId: KeyId, rateLimitId: RateLimitId },
  { ...strict, title: 'ApplyPlanRequest' },
);

export const RemovePlanRequest = Type.Object({ consumerApiKeyId: KeyId }, { ...strict, title: 'RemovePlanRequest' });

// ---- responses ----

const keyStateFields = {
  rateLimitId: Type.Union([RateLimitId, Type.Null()], { description: 'The bound plan, or null' }),
  enabled: Type.Boolean(),
  expiresAt: Type.Union([IsoTimestamp, Type.Null()]),
  externalId: Type.Union([Type.String(), Type.Null()]),
  lastUsedAt: Type.Union([IsoTimestamp, Type.Null()], {
    description: 'The last proxied request that presented the key (visible within 2 s), or null',
  }),
};

export const CreateKeyResponse = Type.Object(
  { id: KeyId, name: Type.String(), secret: Secret, createdAt: CreateTimestamp, ...keyStateFields, metadata: Metadata },
  { ...strict, title: 'CreateKeyResponse' },
);

const KeySummary = Type.Object(
  { consumerApiKeyId: KeyId, name: Type.String(), createdAt: IsoTimestamp, lastUpdated: IsoTimestamp, ...keyStateFields },
  { ...strict, title: 'KeySummary' },
);

export const ListKeysResponse = Type.Object(
  {
    apiKeys: Type.Array(KeySummary, { description: 'Oldest first' }),
    nextCursor: Type.Optional(
      Type.String({
        description: 'Present only when more keys remain: pass it as `cursor` for the next page',
      }),
    ),
  },
  { ...strict, title: 'ListKeysResponse' },
);

const EndpointUsage = Type.Object(
  {
    endpoint: Type.String({
      description: 'Request path without the query string, cut at 512 characters; "(other)" beyond 1000 distinct paths',
    }),
    requests: Count,
    successful: Count,
    failed: Count,
    averageResponseTimeMs: Type.Number({
      minimum: 0,
      description: 'Mean time from request received to response finished',
    }),
  },
  strict,
);

const CustomerUsage = Type.Object(
  { customerId: Type.String(), requests: Count, successful: Count, failed: Count },
  strict,
);

const usageTotalsFields = {
  totalRequests: Type.Integer({ minimum: 0, description: 'Proxied requests that presented this key' }),
  successfulRequests: Type.Integer({
    minimum: 0,
    description: 'Forwarded and answered by the backend with a status below 400',
  }),
  failedRequests: Type.Integer({ minimum: 0, description: 'The rest: 429, 502, 504, backend 4xx and 5xx' }),
  endpoints: Type.Array(EndpointUsage, { description: 'One entry per request path, most requests first' }),
  usageByCustomer: Type.Array(CustomerUsage, {
    description:
      'Grouped by the customer-id header (CUSTOMER_ID_HEADER); requests without it are not listed. At most 1,000 customers, most requests first (see usageByCustomerNotListed)',
  }),
  usageByCustomerNotListed: Type.Optional(
    Type.Object(
      { customers: Count, requests: Count, successful: Count, failed: Count },
      {
        ...strict,
        description:
          'Present when the key has more customers than usageByCustomer lists: how many more, and their usage summed. Every customer by day or month: GET /consumer-api-key/{id}/usage?groupBy=customer',
      },
    ),
  ),
};

/** What the usage reader returns: the contract's usage object less `rateLimits`, which the limiter knows. */
export const UsageTotals = Type.Object(usageTotalsFields, { ...strict, title: 'UsageTotals' });
export type UsageTotals = Static<typeof UsageTotals>;

const resetTime = {
  ...IsoTimestamp,
  description: 'A fixed limit: the end of the current window, when the count is cleared. A sliding limit: when the oldest requests it counts stop counting',
};
const RateLimitState = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, description: 'Of the limit with the fewest requests left' }),
    remaining: Count,
    resetTime,
    limits: Type.Array(
      Type.Object({ name: LimitName, limit: PlanLimit, period: PeriodSchema, remaining: Count, resetTime }, { ...strict, title: 'LimitState' }),
      { description: "Every limit of the key's plan, in the plan's order" },
    ),
  },
  { ...strict, title: 'RateLimitState' },
);

const Usage = Type.Object(
  {
    totalRequests: usageTotalsFields.totalRequests,
    successfulRequests: usageTotalsFields.successfulRequests,
    failedRequests: usageTotalsFields.failedRequests,
    rateLimits: Type.Union([RateLimitState, Type.Null()], {
      description: "From the key's plan, else DEFAULT_RATE_LIMIT; null when neither applies",
    }),
    endpoints: usageTotalsFields.endpoints,
    usageByCustomer: usageTotalsFields.usageByCustomer,
    usageByCustomerNotListed: usageTotalsFields.usageByCustomerNotListed,
  },
  strict,
);

const keyFields = {
  consumerApiKeyId: KeyId,
  name: Type.String(),
  secret: Secret,
  createdAt: IsoTimestamp,
  lastUpdated: IsoTimestamp,
  ...keyStateFields,
  metadata: Metadata,
};

export const KeyDetailResponse = Type.Object({ ...keyFields, usage: Usage }, { ...strict, title: 'KeyDetailResponse' });

/** A key as the detail shows it, without `usage`: the answer to a change. */
export const KeyResponse = Type.Object(keyFields, { ...strict, title: 'KeyResponse' });

export const RollKeyResponse = Type.Object(
  {
    consumerApiKeyId: KeyId,
    secret: { ...Secret, description: 'The new secret; works at once on every replica' },
    previousSecretExpiresAt: {
      ...IsoTimestamp,
      description: 'The previous secret is refused (401 invalid_api_key) from this instant on every replica',
    },
  },
  { ...strict, title: 'RollKeyResponse' },
);

export const DeleteKeyResponse = Type.Object(
  { consumerApiKeyId: KeyId, message: Type.String() },
  { ...strict, title: 'DeleteKeyResponse' },
);

export const PlanResponse = Type.Object(
  {
    rateLimitId: RateLimitId,
    description: Type.String(),
    limit: { ...PlanLimit, description: 'The first limit of `limits`' },
    period: { ...PeriodSchema, description: 'The period of the first limit of `limits`' },
    createdAt: IsoTimestamp,
    limits: Type.Array(PlanLimitSchema, { minItems: 1, maxItems: MAX_LIMITS }),
    lastUpdated: IsoTimestamp,
    keyCount: Type.Integer({ minimum: 0, description: 'Keys bound to the plan' }),
  },
  { ...strict, title: 'PlanResponse' },
);

export const ListPlansResponse = Type.Object(
  {
    rateLimits: Type.Array(PlanResponse, { description: 'Oldest first' }),
    nextCursor: ListKeysResponse.properties.nextCursor,
  },
  { ...strict, title: 'ListPlansResponse' },
);

export const DeletePlanResponse = Type.Object(
  { rateLimitId: RateLimitId, message: Type.String() },
  { ...strict, title: 'DeletePlanResponse' },
);

export const ApplyPlanResponse = Type.Object(
  { consumerApiKeyId: KeyId, rateLimitId: RateLimitId, message: Type.String() },
  { ...strict, title: 'ApplyPlanResponse' },
);

export const RemovePlanResponse = Type.Object(
  { consumerApiKeyId: KeyId, rateLimitId: Type.Null(), message: Type.String() },
  { ...strict, title: 'RemovePlanResponse' },
);

// ---- usage over time ----

export const GranularitySchema = Type.Unsafe<'minute' | 'hour' | 'day' | 'month'>({
  type: 'string',
  enum: ['minute', 'hour', 'day', 'month'],
  description: 'Bucket size, aligned to UTC. Default: minute up to 3 h, hour up to 4 days, day beyond',
});

const usageQueryFields = {
  from: Type.Optional({ ...IsoTimestampInput, description: 'Start of the range (default: 24 h before `to`)' }),
  to: Type.Optional({ ...IsoTimestampInput, description: 'End of the range, exclusive (default: now)' }),
  granularity: Type.Optional(GranularitySchema),
};

export const KeyUsageQuery = Type.Object(
  {
    ...usageQueryFields,
    groupBy: Type.Optional(
      Type.Unsafe<'endpoint' | 'customer'>({ type: 'string', enum: ['endpoint', 'customer'], description: 'Adds one series per endpoint or customer (day and month granularity only)' }),
    ),
  },
  { ...strict, title: 'KeyUsageQuery' },
);

export const FleetUsageQuery = Type.Object(usageQueryFields, { ...strict, title: 'FleetUsageQuery' });

const UsageBucket = Type.Object(
  {
    start: IsoTimestamp,
    requests: Count,
    successful: { ...Count, description: 'Answered by the backend below 400' },
    failed: { ...Count, description: 'The rest: successful + failed = requests' },
    rateLimited: { ...Count, description: "Refused by the limiter (429): part of failed" },
    averageResponseTimeMs: Type.Number({ minimum: 0 }),
  },
  { ...strict, title: 'UsageBucket' },
);

const usageRangeFields = {
  granularity: GranularitySchema,
  from: { ...IsoTimestamp, description: 'Start of the first bucket' },
  to: { ...IsoTimestamp, description: 'End of the last bucket' },
  buckets: Type.Array(UsageBucket, { description: 'Every bucket of the range, oldest first, zero-filled' }),
};

/** A series names exactly one of its endpoint or its customer, as `groupBy` asked. */
const EndpointSeries = Type.Object({ endpoint: Type.String(), buckets: Type.Array(UsageBucket) }, { ...strict, description: 'groupBy=endpoint: one request path' });
const CustomerSeries = Type.Object({ customerId: Type.String(), buckets: Type.Array(UsageBucket) }, { ...strict, description: 'groupBy=customer: one customer' });

export const KeyUsageResponse = Type.Object(
  {
    consumerApiKeyId: KeyId,
    ...usageRangeFields,
    series: Type.Optional(
      // The type stays the wider one the usage route builds (its name field is computed).
      Type.Array(Type.Unsafe<{ endpoint?: string; customerId?: string; buckets: Static<typeof UsageBucket>[] }>({ oneOf: [EndpointSeries, CustomerSeries] }), {
        description: 'With groupBy: one per endpoint (or customer), most requests first',
      }),
    ),
  },
  { ...strict, title: 'KeyUsageResponse' },
);

export const FleetUsageResponse = Type.Object(
  {
    ...usageRangeFields,
    topKeys: Type.Array(
      Type.Object({ consumerApiKeyId: KeyId, name: Type.String(), requests: Count, rateLimited: Count }, strict),
      { maxItems: 10, description: 'The keys with the most requests in the range, most first' },
    ),
  },
  { ...strict, title: 'FleetUsageResponse' },
);

export type KeyUsageResponse = Static<typeof KeyUsageResponse>;
export type FleetUsageResponse = Static<typeof FleetUsageResponse>;

// ---- admin tokens and the audit log ----

const ScopeSchema = Type.Unsafe<Scope>({ type: 'string', enum: [...SCOPES], description: 'What the token may do' });
const AdminTokenId = Type.String({ description: 'Identifier of an admin token', examples: ['tok_Yc2xR0f1bW8mT5nYk9Lp4A'] });

export const CreateAdminTokenRequest = Type.Object(
  {
    name: Name,
    scopes: Type.Array(ScopeSchema, { minItems: 1, uniqueItems: true, description: 'At most the scopes the caller holds' }),
    expiresAt: Type.Optional(Type.Union([IsoTimestampInput, Type.Null()], { description: 'Refused from this instant; null: never' })),
  },
  { ...strict, title: 'CreateAdminTokenRequest' },
);

const adminTokenFields = {
  id: AdminTokenId,
  name: Type.String(),
  scopes: Type.Array(ScopeSchema),
  expiresAt: Type.Union([IsoTimestamp, Type.Null()]),
  createdAt: IsoTimestamp,
};

export const AdminTokenResponse = Type.Object(adminTokenFields, { ...strict, title: 'AdminToken' });

export const CreateAdminTokenResponse = Type.Object(
  {
    ...adminTokenFields,
    secret: Type.String({ description: 'The token: shown this once, stored only as a hash', examples: ['tga_3lB0sGm6yq0i3I2xJfN8m0rWbq2cQ8uYd5vZk1eHhTs'] }),
  },
  { ...strict, title: 'CreateAdminTokenResponse' },
);

export const ListAdminTokensResponse = Type.Object(
  { adminTokens: Type.Array(AdminTokenResponse, { description: 'Oldest first; never a secret' }) },
  { ...strict, title: 'ListAdminTokensResponse' },
);

export const DeleteAdminTokenResponse = Type.Object({ id: AdminTokenId, message: Type.String() }, { ...strict, title: 'DeleteAdminTokenResponse' });

export const AuditLogQuery = Type.Object(
  {
    ...pageFields,
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'e.g. key.update' })),
    targetId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'A key id, plan id or admin token id' })),
    actorId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'An admin token id, or `root` for the root token' })),
    from: Type.Optional({ ...IsoTimestampInput, description: 'Entries at or after this instant' }),
    to: Type.Optional({ ...IsoTimestampInput, description: 'Entries before this instant' }),
  },
  { ...strict, title: 'AuditLogQuery' },
);

const AuditEntry = Type.Object(
  {
    id: Type.String(),
    time: IsoTimestamp,
    actor: Type.Object(
      { type: Type.Union([Type.Literal('root'), Type.Literal('token')]), id: Type.Optional(AdminTokenId), name: Type.Optional(Type.String()) },
      { ...strict, description: 'The root token, or an admin token (its id and name)' },
    ),
    action: Type.String({ description: 'key.create, key.update, key.roll, key.delete, key.apply_plan, key.remove_plan, plan.create, plan.update, plan.delete, admin_token.create, admin_token.delete' }),
    target: Type.Object({ type: Type.String({ description: 'key, plan or admin_token' }), id: Type.String() }, strict),
    requestId: Type.String({ description: 'The x-request-id of the call' }),
    clientAddress: Type.String(),
    changes: Type.Object(
      { before: Type.Unknown({ description: 'The target before; null: it did not exist' }), after: Type.Unknown({ description: 'The target after; null: it no longer exists' }) },
      { ...strict, description: 'Never a secret, token, hash or ciphertext' },
    ),
  },
  { ...strict, title: 'AuditEntry' },
);

export const AuditLogResponse = Type.Object(
  { auditLog: Type.Array(AuditEntry, { description: 'Newest first' }), nextCursor: ListKeysResponse.properties.nextCursor },
  { ...strict, title: 'AuditLogResponse' },
);

export type CreateAdminTokenResponse = Static<typeof CreateAdminTokenResponse>;
export type AdminTokenResponse = Static<typeof AdminTokenResponse>;
export type ListAdminTokensResponse = Static<typeof ListAdminTokensResponse>;
export type DeleteAdminTokenResponse = Static<typeof DeleteAdminTokenResponse>;
export type AuditLogResponse = Static<typeof AuditLogResponse>;

export const ValidationDetail = Type.Object(
  {
    field: Type.String({
      description: 'The offending field: a dotted path, or "(body)" for the body as a whole',
    }),
    message: Type.String(),
  },
  strict,
);
export type ValidationDetail = Static<typeof ValidationDetail>;

export const ErrorResponse = Type.Object(
  {
    error: Type.String({ description: 'Human-readable message' }),
    code: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'Stable snake_case code' }),
    details: Type.Optional(
      Type.Array(ValidationDetail, { description: 'validation_failed only: each offending field' }),
    ),
    keyCount: Type.Optional(Type.Integer({ minimum: 1, description: 'rate_limit_in_use only: keys bound to the plan' })),
  },
  { ...strict, title: 'Error' },
);

/** The proxy's 429 body (documented here; the proxy writes it). */
export const RateLimitExceededResponse = Type.Object(
  {
    error: Type.String(),
    limit: Type.Integer({ minimum: 1 }),
    period: PeriodSchema,
    remaining: Type.Literal(0),
    resetTime: IsoTimestamp,
    name: LimitName,
  },
  {
    ...strict,
    title: 'RateLimitExceeded',
    description: 'The refusing limit whose window ends last: `resetTime` is the earliest moment a retry can succeed',
  },
);

export type CreateKeyRequest = Static<typeof CreateKeyRequest>;
export type UpdateKeyRequest = Static<typeof UpdateKeyRequest>;
export type ListPlansQuery = Static<typeof ListPlansQuery>;
export type KeyResponse = Static<typeof KeyResponse>;
export type RollKeyResponse = Static<typeof RollKeyResponse>;
export type PlanResponse = Static<typeof PlanResponse>;
export type ListPlansResponse = Static<typeof ListPlansResponse>;
export type DeletePlanResponse = Static<typeof DeletePlanResponse>;
export type RemovePlanResponse = Static<typeof RemovePlanResponse>;
export type ListKeysQuery = Static<typeof ListKeysQuery>;
export type CreatePlanRequest = Static<typeof CreatePlanRequest>;
export type UpdatePlanRequest = Static<typeof UpdatePlanRequest>;
export type ApplyPlanRequest = Static<typeof ApplyPlanRequest>;
export type CreateKeyResponse = Static<typeof CreateKeyResponse>;
export type ListKeysResponse = Static<typeof ListKeysResponse>;
export type KeyDetailResponse = Static<typeof KeyDetailResponse>;
export type DeleteKeyResponse = Static<typeof DeleteKeyResponse>;
export type ApplyPlanResponse = Static<typeof ApplyPlanResponse>;

/** Every named schema, for the OpenAPI components. */
export const NAMED_SCHEMAS: Record<string, TSchema> = {
  CreateKeyRequest,
  CreateKeyResponse,
  UpdateKeyRequest,
  RollKeyRequest,
  RollKeyResponse,
  ListKeysResponse,
  KeyDetailResponse,
  KeyResponse,
  DeleteKeyResponse,
  CreatePlanRequest,
  UpdatePlanRequest,
  PlanResponse,
  ListPlansResponse,
  DeletePlanResponse,
  ApplyPlanRequest,
  ApplyPlanResponse,
  RemovePlanRequest,
  RemovePlanResponse,
  KeyUsageResponse,
  FleetUsageResponse,
  CreateAdminTokenRequest,
  CreateAdminTokenResponse,
  AdminToken: AdminTokenResponse,
  ListAdminTokensResponse,
  DeleteAdminTokenResponse,
  AuditEntry,
  AuditLogResponse,
  Error: ErrorResponse,
  RateLimitExceeded: RateLimitExceededResponse,
};
