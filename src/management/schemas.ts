/**
 * One TypeBox schema per request and response of the management API: the source of the ajv
 * validators, of the TypeScript types and of the OpenAPI document, so the three cannot drift apart.
 */
import { Type, type Static } from '@sinclair/typebox';
import { EVENT_TYPES, type EventType } from '../events/event-types.js';
import { ALGORITHMS, MAX_COST, MAX_COSTS, MAX_LIMITS, MIN_COST, type Algorithm } from '../plans/plan.js';
import { PERIODS, type Period } from '../plans/window.js';
import { AUDIT_ACTIONS } from '../store/audit-actions.js';
import { CreditsInput, CreditsOrNull } from './credit-schemas.js';
import { GRANULARITIES, type Granularity } from '../usage/granularity.js';
import { RATE_LIMIT_ID_PATTERN, RequestMatchSchema, RouteId } from './request-match-schemas.js';
import { KEY_SORTS, type KeySort } from './key-list-sort.js';
import { SCOPES, type Scope } from './scopes.js';

// Postgres text cannot hold U+0000; refusing it here keeps such input a 400 instead of a database error.
export const NO_NUL = '^[^\\u0000]*$';

export const ISO_TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$';
export const CREATE_TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$';

export const MAX_NAME_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 1000;
export const MAX_KEY_ID_LENGTH = 128;
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 100;
/** The key list counts matching keys up to this many: a bound on the work of `count=true`. */
export const MAX_COUNTED_KEYS = 10_000;

export const IsoTimestamp = Type.String({
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
export const Count = Type.Integer({ minimum: 0 });
export const strict = { additionalProperties: false } as const;
/** A timestamp a caller sends: the same shape, checked for a real date by the route (see `parseTimestamp`). */
const IsoTimestampInput = Type.String({
  pattern: ISO_TIMESTAMP_PATTERN,
  description: 'UTC, whole seconds: YYYY-MM-DDThh:mm:ssZ',
});
export const MAX_METADATA_BYTES = 8 * 1024;
/** Objects and arrays in metadata nest at most this deep: deeper is no owner's record, only a way to exhaust a stack. */
export const MAX_METADATA_DEPTH = 32;
export const MAX_GRACE_PERIOD_SECONDS = 604_800;

const Name = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  pattern: NO_NUL,
  description: 'Free label, 1-200 characters (U+0000 excluded)',
});
// `*`, not `+`: minLength reports an empty value, so it is named once, not twice.
export const KEY_ID_PATTERN = '^[A-Za-z0-9._~:-]*$';
export const KeyId = Type.String({
  minLength: 1,
  maxLength: MAX_KEY_ID_LENGTH,
  pattern: KEY_ID_PATTERN,
  description: 'Identifier of a consumer API key, as returned by create (`id`)',
  examples: ['key_3q2xR0f1bW8mT5nYk9Lp4A'],
});
export const RateLimitId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: RATE_LIMIT_ID_PATTERN,
  description: 'Chosen by the caller: 1-128 characters of A-Z a-z 0-9 . _ : -',
  examples: ['gold-1000-per-hour'],
});
export const CONSUMER_ID_PATTERN = '^con_[A-Za-z0-9_-]{22}$';
export const ConsumerId = Type.String({
  pattern: CONSUMER_ID_PATTERN,
  description: 'Identifier of a consumer, as returned by its creation (`consumerId`)',
  examples: ['con_Yc2xR0f1bW8mT5nYk9Lp4A'],
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
  description:
    'Names the limit in the RateLimit headers and the 429 body: 1-32 characters of A-Z a-z 0-9 _ -, unique within the plan. Default: the period',
  examples: ['burst', 'monthly-quota'],
});
export const AlgorithmSchema = Type.Unsafe<Algorithm>({
  type: 'string',
  enum: [...ALGORITHMS],
  description:
    '`fixed` (default): UTC-aligned windows, exactly `limit` per window across replicas. `sliding`: never more than `limit` in any span of one period across replicas; a request may be refused for requests up to one period and a twentieth old (see docs/guides/plans.md)',
});
const LimitMatch = {
  ...RequestMatchSchema,
  description:
    'The limit counts only the requests it matches (every condition given must hold); absent: every request. A limit with a match counts in a count of its own',
};
const LimitInput = Type.Object(
  {
    limit: PlanLimit,
    period: PeriodSchema,
    name: Type.Optional(LimitName),
    algorithm: Type.Optional(AlgorithmSchema),
    match: Type.Optional(LimitMatch),
  },
  { ...strict, title: 'PlanLimitInput' },
);
const LimitsInput = Type.Array(LimitInput, {
  minItems: 1,
  maxItems: MAX_LIMITS,
  description: `1 to ${MAX_LIMITS} limits, each checked and counted for every request it applies to; names unique, and no two limits without a match of the same period and algorithm`,
});
const PlanLimitSchema = Type.Object(
  {
    name: LimitName,
    limit: PlanLimit,
    period: PeriodSchema,
    algorithm: AlgorithmSchema,
    match: Type.Optional(LimitMatch),
  },
  { ...strict, title: 'PlanLimit' },
);
const CostRuleSchema = Type.Object(
  {
    match: RequestMatchSchema,
    cost: Type.Integer({
      minimum: MIN_COST,
      maximum: MAX_COST,
      description: `What a matching request costs, ${MIN_COST} to ${MAX_COST} units of every limit and balance that applies`,
    }),
  },
  { ...strict, title: 'PlanCost' },
);
const Costs = Type.Array(CostRuleSchema, {
  maxItems: MAX_COSTS,
  description: `At most ${MAX_COSTS}. The first that matches a request gives its cost; a request none matches costs 1 (a key's plan is asked first, then its consumer's)`,
});
const AllowedRouteIds = Type.Union(
  [
    Type.Array(RouteId, {
      maxItems: 100,
      uniqueItems: true,
      description: 'Route ids (contract section 15)',
    }),
    Type.Null(),
  ],
  {
    description:
      'The routes the key may take; a request any other route (or the catch-all, UPSTREAM_URL) takes is refused with 403 `route_not_allowed`, not forwarded and not charged. null: every route',
  },
);
const Secret = Type.String({
  description: 'The consumer API key itself (`Authorization: Bearer <secret>` or `x-api-key: <secret>`)',
  examples: ['tg_3lB0sGm6yq0i3I2xJfN8m0rWbq2cQ8uYd5vZk1eHhTs'],
});

export const ExternalId = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  pattern: NO_NUL,
  description: "The owner's id in the caller's system, 1-200 characters",
});
export const Metadata = Type.Record(Type.String(), Type.Unknown(), {
  description: `A JSON object of at most ${MAX_METADATA_BYTES} bytes as serialised and ${MAX_METADATA_DEPTH} levels of nesting, returned as given`,
});
const Enabled = Type.Boolean({
  description: 'A disabled key is refused with 403 key_disabled, without consuming quota',
});
const ExpiresAt = Type.Union([IsoTimestampInput, Type.Null()], {
  description: 'From this instant the key is refused with 401 key_expired; null: never',
});

// ---- requests ----

const keySettings = {
  externalId: Type.Optional(Type.Union([ExternalId, Type.Null()])),
  metadata: Type.Optional(
    Type.Union([Metadata, Type.Null()], { description: `${Metadata.description}; null: \`{}\`` }),
  ),
  enabled: Type.Optional(Enabled),
  expiresAt: Type.Optional(ExpiresAt),
  consumerId: Type.Optional(
    Type.Union([ConsumerId, Type.Null()], { description: 'The consumer the key belongs to; null: none' }),
  ),
  allowedRouteIds: Type.Optional(AllowedRouteIds),
  credits: Type.Optional(CreditsInput),
};

export const CreateKeyRequest = Type.Object(
  { name: Name, ...keySettings, rateLimitId: Type.Optional(Type.Union([RateLimitId, Type.Null()])) },
  { ...strict, title: 'CreateKeyRequest' },
);

export const UpdateKeyRequest = Type.Object(
  { name: Type.Optional(Name), ...keySettings },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdateKeyRequest',
    description:
      'Any of the fields; null clears externalId, expiresAt, consumerId, allowedRouteIds (every route), credits and metadata (to `{}`)',
  },
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

export const pageFields = {
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
    namePrefix: Type.Optional({
      ...Name,
      description: 'Keys whose name starts with this text (case-sensitive)',
    }),
    name: Type.Optional({
      ...Name,
      description:
        'Keys whose name starts with this text, ignoring case (every letter on Postgres; A-Z on the embedded store)',
    }),
    consumerId: Type.Optional({ ...ConsumerId, description: 'Keys of this consumer' }),
    sort: Type.Optional(
      Type.Unsafe<KeySort>({
        type: 'string',
        enum: [...KEY_SORTS],
        default: 'createdAt',
        description:
          '`createdAt`: oldest first; `-createdAt`: newest first; `-lastUsedAt`: most recently used first, never-used last (`lastUsedAt`: the reverse); `-requests24h`: most requests in the last 24 hours (by whole hours, as the usage API counts them) first (`requests24h`: the reverse). Ties go by key id. A cursor continues the order it was issued for; a traffic order keeps the window of its first page',
      }),
    ),
    count: Type.Optional(
      Type.Boolean({
        description: `\`true\`: the answer carries \`total\`, how many keys match the filters (counted up to ${MAX_COUNTED_KEYS.toLocaleString('en-US')})`,
      }),
    ),
  },
  { ...strict, title: 'ListKeysQuery' },
);

export const ListPlansQuery = Type.Object(pageFields, { ...strict, title: 'ListPlansQuery' });

export const DeletePlanQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Boolean({ description: '`true`: unbind the keys bound to the plan, then delete it' }),
    ),
  },
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
    costs: Type.Optional(Costs),
  },
  {
    ...strict,
    title: 'CreatePlanRequest',
    description: '`limit` and `period` (one fixed limit, as the seed), or `limits`: not both',
  },
);

export const UpdatePlanRequest = Type.Object(
  {
    // No default here: a change that leaves the description out keeps it.
    description: Type.Optional(
      Type.String({
        maxLength: MAX_DESCRIPTION_LENGTH,
        pattern: NO_NUL,
        description: 'Free text, at most 1000 characters',
      }),
    ),
    limit: Type.Optional({ ...PlanLimit, description: 'For a plan of one limit: its new limit' }),
    period: Type.Optional({ ...PeriodSchema, description: 'For a plan of one limit: its new period' }),
    limits: Type.Optional(LimitsInput),
    costs: Type.Optional({
      ...Costs,
      description: `${Costs.description}. Replaces every cost; [] removes them`,
    }),
  },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdatePlanRequest',
    description:
      'Any of the fields; `limits` replaces every limit and cannot come with `limit` or `period`. The current windows keep what they have spent',
  },
);

export const ApplyPlanRequest = Type.Object(
  { consumerApiKeyId: KeyId, rateLimitId: RateLimitId },
  { ...strict, title: 'ApplyPlanRequest' },
);

export const RemovePlanRequest = Type.Object(
  { consumerApiKeyId: KeyId },
  { ...strict, title: 'RemovePlanRequest' },
);

// ---- responses ----

const keyStateFields = {
  rateLimitId: Type.Union([RateLimitId, Type.Null()], { description: 'The bound plan, or null' }),
  enabled: Type.Boolean(),
  expiresAt: Type.Union([IsoTimestamp, Type.Null()]),
  externalId: Type.Union([Type.String(), Type.Null()]),
  lastUsedAt: Type.Union([IsoTimestamp, Type.Null()], {
    description: 'The last proxied request that presented the key (visible within 2 s), or null',
  }),
  consumerId: Type.Union([ConsumerId, Type.Null()], {
    description: 'The consumer the key belongs to, or null',
  }),
  allowedRouteIds: AllowedRouteIds,
};

export const CreateKeyResponse = Type.Object(
  {
    id: KeyId,
    name: Type.String(),
    secret: Secret,
    createdAt: CreateTimestamp,
    ...keyStateFields,
    metadata: Metadata,
    credits: CreditsOrNull,
  },
  { ...strict, title: 'CreateKeyResponse' },
);

export const KeySummary = Type.Object(
  {
    consumerApiKeyId: KeyId,
    name: Type.String(),
    createdAt: IsoTimestamp,
    lastUpdated: IsoTimestamp,
    ...keyStateFields,
  },
  { ...strict, title: 'KeySummary' },
);

export const ListKeysResponse = Type.Object(
  {
    apiKeys: Type.Array(KeySummary, { description: 'In the order `sort` names (oldest first by default)' }),
    nextCursor: Type.Optional(
      Type.String({
        description: 'Present only when more keys remain: pass it as `cursor` for the next page',
      }),
    ),
    total: Type.Optional(
      Type.Object(
        {
          count: Type.Integer({ minimum: 0, maximum: MAX_COUNTED_KEYS }),
          exact: Type.Boolean({
            description: `false: more than \`count\` (${MAX_COUNTED_KEYS.toLocaleString('en-US')}) keys match`,
          }),
        },
        { ...strict, description: 'With `count=true`: how many keys match the filters' },
      ),
    ),
  },
  { ...strict, title: 'ListKeysResponse' },
);

const EndpointUsage = Type.Object(
  {
    endpoint: Type.String({
      description:
        'Request path without the query string, cut at 512 characters at a whole character (never inside a percent-escape); "(other)" beyond 1000 distinct paths',
    }),
    requests: Count,
    successful: Count,
    failed: Count,
    averageResponseTimeMs: Type.Number({
      minimum: 0,
      description: 'Mean time from request received to response finished',
    }),
    cost: { ...Count, description: 'Units charged' },
  },
  strict,
);

const CustomerUsage = Type.Object(
  {
    customerId: Type.String({
      description:
        'The CUSTOMER_ID_HEADER value read as UTF-8 (a byte sequence that is not UTF-8 as U+FFFD), cut at 200 characters',
    }),
    requests: Count,
    successful: Count,
    failed: Count,
  },
  strict,
);

const usageTotalsFields = {
  totalRequests: Type.Integer({ minimum: 0, description: 'Proxied requests that presented this key' }),
  successfulRequests: Type.Integer({
    minimum: 0,
    description: 'Forwarded and answered by the backend with a status below 400',
  }),
  failedRequests: Type.Integer({ minimum: 0, description: 'The rest: 429, 502, 504, backend 4xx and 5xx' }),
  cost: Type.Integer({
    minimum: 0,
    description:
      "Units charged: the cost of each admitted request (its plans' `costs`, else 1), 0 per refused one (usage counted before the upgrade that added it: 0)",
  }),
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
  description:
    'A fixed limit: the end of the current window, when the count is cleared. A sliding limit: when the oldest requests it counts stop counting',
};
const LimitScope = Type.Unsafe<'key' | 'consumer'>({
  type: 'string',
  enum: ['key', 'consumer'],
  description:
    "Whose limit: the key's own plan, or the plan of the consumer that holds the key (shared by all its keys)",
});
/** A limit as the RateLimit headers, the 429 body and the details name it: a consumer's with `consumer.` before its name. */
const ScopedLimitName = Type.String({
  pattern: '^(consumer\\.)?[A-Za-z0-9_-]{1,32}$',
  description: "The limit's name; a consumer's limit is named `consumer.<name>`",
  examples: ['burst', 'consumer.monthly-quota'],
});
/** Where one limit stands: an entry of `usage.rateLimits.limits` (and of verify's `limits`). */
export const limitStateFields = {
  name: ScopedLimitName,
  limit: PlanLimit,
  period: PeriodSchema,
  remaining: Count,
  resetTime,
  scope: LimitScope,
};
const RateLimitState = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, description: 'Of the limit with the fewest requests left' }),
    remaining: Count,
    resetTime,
    limits: Type.Array(Type.Object(limitStateFields, { ...strict, title: 'LimitState' }), {
      description: "Every limit that applies: the key's plan in its order, then its consumer's",
    }),
  },
  { ...strict, title: 'RateLimitState' },
);

const Usage = Type.Object(
  {
    totalRequests: usageTotalsFields.totalRequests,
    successfulRequests: usageTotalsFields.successfulRequests,
    failedRequests: usageTotalsFields.failedRequests,
    cost: usageTotalsFields.cost,
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
  secret: Type.Optional({
    ...Secret,
    description: `${Secret.description}; present only for callers holding keys:secrets`,
  }),
  createdAt: IsoTimestamp,
  lastUpdated: IsoTimestamp,
  ...keyStateFields,
  metadata: Metadata,
  credits: CreditsOrNull,
  previousSecretExpiresAt: Type.Optional({
    ...IsoTimestamp,
    description:
      'Present after a roll while the previous secret still works: it is refused (401 invalid_api_key) from this instant, as the roll answered',
  }),
};

export const KeyDetailResponse = Type.Object(
  { ...keyFields, usage: Usage },
  { ...strict, title: 'KeyDetailResponse' },
);

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
    costs: Costs,
    lastUpdated: IsoTimestamp,
    keyCount: Type.Integer({ minimum: 0, description: 'Keys bound to the plan' }),
    consumerCount: Type.Integer({ minimum: 0, description: 'Consumers bound to the plan' }),
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

export const GranularitySchema = Type.Unsafe<Granularity>({
  type: 'string',
  enum: [...GRANULARITIES],
  description: 'Bucket size, aligned to UTC. Default: minute up to 3 h, hour up to 4 days, day beyond',
});

/** A range end: like every timestamp, but a fraction of a second (as toISOString() writes it) is accepted and cut off. */
const RangeTimestamp = Type.String({
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$',
  description: 'UTC: YYYY-MM-DDThh:mm:ssZ (a fraction of a second is cut off)',
});
const usageQueryFields = {
  from: Type.Optional({
    ...RangeTimestamp,
    description: 'Start of the range (default: 24 h before `to`); a fraction of a second is cut off',
  }),
  to: Type.Optional({
    ...RangeTimestamp,
    description:
      'End of the range, exclusive (default: now); its last bucket must end by 9999-12-31T23:59:59Z',
  }),
  granularity: Type.Optional(GranularitySchema),
};

export const KeyUsageQuery = Type.Object(
  {
    ...usageQueryFields,
    groupBy: Type.Optional(
      Type.Unsafe<'endpoint' | 'customer' | 'route'>({
        type: 'string',
        enum: ['endpoint', 'customer', 'route'],
        description: 'Adds one series per endpoint, customer or route (day and month granularity only)',
      }),
    ),
  },
  { ...strict, title: 'KeyUsageQuery' },
);

export const FleetUsageQuery = Type.Object(
  {
    ...usageQueryFields,
    groupBy: Type.Optional(
      Type.Unsafe<'route'>({
        type: 'string',
        enum: ['route'],
        description: 'Adds one series per route, summed over every key (day and month granularity only)',
      }),
    ),
  },
  { ...strict, title: 'FleetUsageQuery' },
);

const LatencyPercentile = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);

const UsageBucket = Type.Object(
  {
    start: IsoTimestamp,
    requests: Count,
    successful: { ...Count, description: 'Answered by the backend below 400' },
    failed: { ...Count, description: 'The rest: successful + failed = requests' },
    rateLimited: { ...Count, description: 'Refused by the limiter (429): part of failed' },
    averageResponseTimeMs: Type.Number({ minimum: 0 }),
    cost: { ...Count, description: 'Units charged: 0 for a refused request' },
    statusClasses: Type.Object(
      { '2xx': Count, '3xx': Count, '4xx': Count, '5xx': Count },
      {
        ...strict,
        description:
          "What the clients got, by class; they add up to requests (a WebSocket's 101 counts as 2xx, a client that left first as 4xx)",
      },
    ),
    outcomes: Type.Object(
      {
        rateLimited: { ...Count, description: 'Refused by the limiter (429)' },
        creditsExhausted: { ...Count, description: 'Refused for want of credits (429 credits_exhausted)' },
        disabled: { ...Count, description: 'Refused: the key is disabled' },
        expired: { ...Count, description: 'Refused: the key has expired' },
        routeNotAllowed: { ...Count, description: 'Refused: the key may not use that route' },
        backendError: { ...Count, description: 'The backend answered 5xx' },
        backendUnreachable: {
          ...Count,
          description: 'Tollgate answered 502 or 504: the backend could not be reached, or timed out',
        },
      },
      { ...strict, description: 'Why requests failed' },
    ),
    latencyMs: Type.Object(
      { p50: LatencyPercentile, p95: LatencyPercentile, p99: LatencyPercentile },
      {
        ...strict,
        description:
          'Response-time percentiles (request received to response finished) from a histogram, within 5 % of the exact value; null in an empty bucket',
      },
    ),
  },
  { ...strict, title: 'UsageBucket' },
);

const usageRangeFields = {
  granularity: GranularitySchema,
  from: { ...IsoTimestamp, description: 'Start of the first bucket' },
  to: { ...IsoTimestamp, description: 'End of the last bucket' },
  buckets: Type.Array(UsageBucket, { description: 'Every bucket of the range, oldest first, zero-filled' }),
};

/** A series names exactly one of its endpoint, its customer or its route, as `groupBy` asked. */
const EndpointSeries = Type.Object(
  { endpoint: Type.String(), buckets: Type.Array(UsageBucket) },
  { ...strict, description: 'groupBy=endpoint: one request path' },
);
const CustomerSeries = Type.Object(
  { customerId: Type.String(), buckets: Type.Array(UsageBucket) },
  { ...strict, description: 'groupBy=customer: one customer' },
);
const RouteSeries = Type.Object(
  {
    routeId: Type.Union([Type.String(), Type.Null()], {
      description:
        'The route the requests took, also after it was deleted; null: the catch-all (UPSTREAM_URL), or no route (404 route_not_found); "(other)": routes beyond the 1,000 a key holds per day and per month',
    }),
    buckets: Type.Array(UsageBucket),
  },
  { ...strict, description: 'groupBy=route: one route' },
);

export const KeyUsageResponse = Type.Object(
  {
    consumerApiKeyId: KeyId,
    ...usageRangeFields,
    series: Type.Optional(
      // The type stays the wider one the usage route builds (its name field is computed).
      Type.Array(
        Type.Unsafe<{
          endpoint?: string;
          customerId?: string;
          routeId?: string | null;
          buckets: Static<typeof UsageBucket>[];
        }>({
          oneOf: [EndpointSeries, CustomerSeries, RouteSeries],
        }),
        {
          description: 'With groupBy: one per endpoint (or customer, or route), most requests first',
        },
      ),
    ),
  },
  { ...strict, title: 'KeyUsageResponse' },
);

export const FleetUsageResponse = Type.Object(
  {
    ...usageRangeFields,
    topKeys: Type.Array(
      Type.Object(
        { consumerApiKeyId: KeyId, name: Type.String(), requests: Count, rateLimited: Count },
        strict,
      ),
      { maxItems: 10, description: 'The keys with the most requests in the range, most first' },
    ),
    topConsumers: Type.Array(
      Type.Object(
        { consumerId: Type.String(), name: Type.String(), requests: Count, rateLimited: Count },
        strict,
      ),
      {
        maxItems: 10,
        description: 'The consumers with the most requests filed under them in the range, most first',
      },
    ),
    series: Type.Optional(
      Type.Array(RouteSeries, { description: 'With groupBy=route: one per route, most requests first' }),
    ),
  },
  { ...strict, title: 'FleetUsageResponse' },
);

export const ConsumerUsageResponse = Type.Object(
  { consumerId: Type.String(), ...usageRangeFields, series: KeyUsageResponse.properties.series },
  { ...strict, title: 'ConsumerUsageResponse' },
);

export type KeyUsageResponse = Static<typeof KeyUsageResponse>;
export type ConsumerUsageResponse = Static<typeof ConsumerUsageResponse>;
export type FleetUsageResponse = Static<typeof FleetUsageResponse>;

// ---- consumers ----

const consumerSettings = {
  externalId: Type.Optional(
    Type.Union([
      {
        ...ExternalId,
        description: "The owner's id in the caller's system, 1-200 characters; unique among consumers",
      },
      Type.Null(),
    ]),
  ),
  metadata: keySettings.metadata,
  rateLimitId: Type.Optional(
    Type.Union([RateLimitId, Type.Null()], { description: 'The plan all its keys share; null: none' }),
  ),
  credits: Type.Optional({
    ...CreditsInput,
    description: `${CreditsInput.description}. Every key of the consumer spends it`,
  }),
};

export const CreateConsumerRequest = Type.Object(
  { name: Name, ...consumerSettings },
  { ...strict, title: 'CreateConsumerRequest' },
);

export const UpdateConsumerRequest = Type.Object(
  { name: Type.Optional(Name), ...consumerSettings },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdateConsumerRequest',
    description:
      'Any of the fields; null clears externalId, rateLimitId and credits, and sets metadata to `{}`',
  },
);

export const ListConsumersQuery = Type.Object(
  {
    ...pageFields,
    externalId: Type.Optional(ExternalId),
    namePrefix: Type.Optional({
      ...Name,
      description: 'Consumers whose name starts with this text (case-sensitive)',
    }),
    search: Type.Optional({
      ...Name,
      description:
        'Consumers whose name or external id holds this text anywhere, in any case (`acme` finds "ACME Corp" and the external id "cus_acme_1")',
    }),
    rateLimitId: Type.Optional({ ...RateLimitId, description: 'Consumers bound to this plan' }),
  },
  { ...strict, title: 'ListConsumersQuery' },
);

export const DeleteConsumerQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Boolean({
        description: '`true`: detach the keys of the consumer (they keep working, alone), then delete it',
      }),
    ),
  },
  { ...strict, title: 'DeleteConsumerQuery' },
);

const consumerFields = {
  consumerId: ConsumerId,
  name: Type.String(),
  externalId: Type.Union([Type.String(), Type.Null()]),
  metadata: Metadata,
  rateLimitId: Type.Union([RateLimitId, Type.Null()], {
    description: 'The plan all its keys share, or null',
  }),
  keyCount: Type.Integer({ minimum: 0, description: 'Keys that belong to the consumer' }),
  credits: {
    ...CreditsOrNull,
    description: `${CreditsOrNull.description}. Every key of the consumer spends it`,
  },
  createdAt: IsoTimestamp,
  lastUpdated: IsoTimestamp,
};

export const ConsumerResponse = Type.Object(consumerFields, { ...strict, title: 'Consumer' });

export const ConsumerDetailResponse = Type.Object(
  {
    ...consumerFields,
    usage: Type.Object(
      {
        ...Usage.properties,
        rateLimits: Type.Union([RateLimitState, Type.Null()], {
          description: "From the consumer's plan, shared by all its keys; null without one",
        }),
      },
      {
        ...strict,
        description:
          'What its keys did while they belonged to it (moving a key moves none of its history), and its shared limits',
      },
    ),
  },
  { ...strict, title: 'ConsumerDetailResponse' },
);

export const ListConsumersResponse = Type.Object(
  {
    consumers: Type.Array(ConsumerResponse, { description: 'Oldest first' }),
    nextCursor: ListKeysResponse.properties.nextCursor,
  },
  { ...strict, title: 'ListConsumersResponse' },
);

export const DeleteConsumerResponse = Type.Object(
  { consumerId: ConsumerId, message: Type.String() },
  { ...strict, title: 'DeleteConsumerResponse' },
);

export type CreateConsumerRequest = Static<typeof CreateConsumerRequest>;
export type UpdateConsumerRequest = Static<typeof UpdateConsumerRequest>;
export type ConsumerResponse = Static<typeof ConsumerResponse>;
export type ConsumerDetailResponse = Static<typeof ConsumerDetailResponse>;
export type ListConsumersResponse = Static<typeof ListConsumersResponse>;
export type DeleteConsumerResponse = Static<typeof DeleteConsumerResponse>;

// ---- webhooks ----

export const WebhookId = Type.String({
  pattern: '^whk_[A-Za-z0-9_-]{22}$',
  description: 'Identifier of a webhook',
  examples: ['whk_Yc2xR0f1bW8mT5nYk9Lp4A'],
});
export const DeliveryId = Type.String({
  pattern: '^dlv_[A-Za-z0-9_-]{22}$',
  description: 'Identifier of a delivery',
  examples: ['dlv_3q2xR0f1bW8mT5nYk9Lp4A'],
});
export const MAX_URL_LENGTH = 2048;

const WebhookUrl = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  pattern: NO_NUL,
  description:
    'Where deliveries are POSTed: an http: or https: URL without user or password, at most 2048 characters. Private and loopback addresses are allowed',
  examples: ['https://billing.internal.example/hooks/tollgate'],
});
const EventTypeSchema = Type.Unsafe<EventType>({
  type: 'string',
  enum: [...EVENT_TYPES],
  description: 'An event type (contract section 16)',
});
const Events = Type.Array(EventTypeSchema, {
  minItems: 1,
  uniqueItems: true,
  description: 'The event types delivered to this webhook, each once',
});
const WebhookDescription = Type.String({
  maxLength: MAX_DESCRIPTION_LENGTH,
  pattern: NO_NUL,
  description: 'Free text, at most 1000 characters',
});

export const CreateWebhookRequest = Type.Object(
  { url: WebhookUrl, events: Events, description: Type.Optional({ ...WebhookDescription, default: '' }) },
  { ...strict, title: 'CreateWebhookRequest' },
);

export const UpdateWebhookRequest = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    events: Type.Optional(Events),
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'A disabled webhook gets no new deliveries and its pending ones wait; enabling it sends those and starts its failure count afresh',
      }),
    ),
    description: Type.Optional(WebhookDescription),
  },
  { ...strict, minProperties: 1, title: 'UpdateWebhookRequest', description: 'Any of the fields' },
);

const webhookFields = {
  id: WebhookId,
  url: Type.String(),
  events: Type.Array(EventTypeSchema),
  description: Type.String(),
  enabled: Type.Boolean(),
  disabledAt: Type.Union([IsoTimestamp, Type.Null()], {
    description: 'When Tollgate disabled the webhook after 3 days of failed deliveries; null otherwise',
  }),
  disabledReason: Type.Union([Type.String(), Type.Null()], {
    description: 'Why Tollgate disabled it; null otherwise',
  }),
  createdAt: IsoTimestamp,
  lastUpdated: IsoTimestamp,
};

export const WebhookResponse = Type.Object(webhookFields, { ...strict, title: 'Webhook' });

export const CreateWebhookResponse = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
      description:
        'The signing secret (Standard Webhooks: the HMAC-SHA256 key is the base64 after `whsec_`): shown this once, stored encrypted',
      examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw7cHuLlmDzyg='],
    }),
  },
  { ...strict, title: 'CreateWebhookResponse' },
);

export const ListWebhooksResponse = Type.Object(
  { webhooks: Type.Array(WebhookResponse, { description: 'Oldest first; never a secret' }) },
  { ...strict, title: 'ListWebhooksResponse' },
);

export const DeleteWebhookResponse = Type.Object(
  { id: WebhookId, message: Type.String() },
  { ...strict, title: 'DeleteWebhookResponse' },
);

export const ListDeliveriesQuery = Type.Object(pageFields, { ...strict, title: 'ListDeliveriesQuery' });

export const DeliveryResponse = Type.Object(
  {
    id: DeliveryId,
    eventId: Type.String({ description: 'The event: the `webhook-id` header of every attempt' }),
    type: EventTypeSchema,
    state: Type.Unsafe<'pending' | 'delivered' | 'failed'>({
      type: 'string',
      enum: ['pending', 'delivered', 'failed'],
      description:
        '`pending`: an attempt is due or in flight; `delivered`: a 2xx came within 15 s; `failed`: every attempt of the schedule failed',
    }),
    attempts: Count,
    lastStatus: Type.Union([Type.Integer(), Type.Null()], {
      description:
        "The receiver's HTTP status at the last attempt; null: none yet, or no answer (see lastError)",
    }),
    lastError: Type.Union([Type.String(), Type.Null()], {
      description:
        'Why the last attempt got no answer (a timeout, a refused or closed connection); null otherwise',
    }),
    lastAttemptAt: Type.Union([IsoTimestamp, Type.Null()]),
    nextAttemptAt: Type.Union([IsoTimestamp, Type.Null()], {
      description: 'When the next attempt is due; null once delivered or failed',
    }),
    createdAt: IsoTimestamp,
  },
  { ...strict, title: 'Delivery' },
);

export const ListDeliveriesResponse = Type.Object(
  {
    deliveries: Type.Array(DeliveryResponse, { description: 'Newest first' }),
    nextCursor: ListKeysResponse.properties.nextCursor,
  },
  { ...strict, title: 'ListDeliveriesResponse' },
);

export type CreateWebhookRequest = Static<typeof CreateWebhookRequest>;
export type UpdateWebhookRequest = Static<typeof UpdateWebhookRequest>;
export type WebhookResponse = Static<typeof WebhookResponse>;
export type CreateWebhookResponse = Static<typeof CreateWebhookResponse>;
export type ListWebhooksResponse = Static<typeof ListWebhooksResponse>;
export type DeleteWebhookResponse = Static<typeof DeleteWebhookResponse>;
export type DeliveryResponse = Static<typeof DeliveryResponse>;
export type ListDeliveriesResponse = Static<typeof ListDeliveriesResponse>;

// ---- admin tokens and the audit log ----

export const ScopeSchema = Type.Unsafe<Scope>({
  type: 'string',
  enum: [...SCOPES],
  description: 'What the token may do',
});
export const AdminTokenId = Type.String({
  pattern: '^tok_[A-Za-z0-9_-]{22}$',
  description: 'Identifier of an admin token',
  examples: ['tok_Yc2xR0f1bW8mT5nYk9Lp4A'],
});

export const CreateAdminTokenRequest = Type.Object(
  {
    name: Name,
    scopes: Type.Array(ScopeSchema, {
      minItems: 1,
      uniqueItems: true,
      description: 'At most the scopes the caller holds',
    }),
    expiresAt: Type.Optional(
      Type.Union([IsoTimestampInput, Type.Null()], { description: 'Refused from this instant; null: never' }),
    ),
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
    secret: Type.String({
      description: 'The token: shown this once, stored only as a hash',
      examples: ['tga_3lB0sGm6yq0i3I2xJfN8m0rWbq2cQ8uYd5vZk1eHhTs'],
    }),
  },
  { ...strict, title: 'CreateAdminTokenResponse' },
);

export const ListAdminTokensResponse = Type.Object(
  { adminTokens: Type.Array(AdminTokenResponse, { description: 'Oldest first; never a secret' }) },
  { ...strict, title: 'ListAdminTokensResponse' },
);

export const DeleteAdminTokenResponse = Type.Object(
  { id: AdminTokenId, message: Type.String() },
  { ...strict, title: 'DeleteAdminTokenResponse' },
);

export const AuditLogQuery = Type.Object(
  {
    ...pageFields,
    action: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: NO_NUL,
        description: `Only this action: ${AUDIT_ACTIONS.join(', ')}`,
      }),
    ),
    targetId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: NO_NUL,
        description:
          'Only changes of this key, plan, consumer, route, admin token, webhook or billing export',
      }),
    ),
    actorId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: NO_NUL,
        description:
          'Only changes made with this admin token (its `id`); `root`: with the root token; `system`: by Tollgate itself',
      }),
    ),
    from: Type.Optional({ ...IsoTimestampInput, description: 'Entries at or after this instant' }),
    to: Type.Optional({ ...IsoTimestampInput, description: 'Entries before this instant' }),
  },
  { ...strict, title: 'AuditLogQuery' },
);

export const AuditEntry = Type.Object(
  {
    id: Type.String(),
    time: IsoTimestamp,
    actor: Type.Object(
      {
        type: Type.Union([Type.Literal('root'), Type.Literal('token'), Type.Literal('system')]),
        id: Type.Optional(AdminTokenId),
        name: Type.Optional(Type.String()),
      },
      {
        ...strict,
        description:
          'The root token, an admin token (its id and name), or Tollgate itself (`system`: a webhook it disabled after 3 days of failures)',
      },
    ),
    action: Type.Union(
      AUDIT_ACTIONS.map((action) => Type.Literal(action)),
      { description: 'What changed (`webhook.disable` is also written by `system`)' },
    ),
    target: Type.Object(
      {
        type: Type.String({
          description: 'key, plan, consumer, route (by routeId), admin_token, webhook or billing_export',
        }),
        id: Type.String(),
      },
      strict,
    ),
    requestId: Type.String({ description: 'The x-request-id of the call; empty for `system` entries' }),
    clientAddress: Type.String({ description: "The caller's address; empty for `system` entries" }),
    changes: Type.Object(
      {
        before: Type.Unknown({ description: 'The target before; null: it did not exist' }),
        after: Type.Unknown({ description: 'The target after; null: it no longer exists' }),
      },
      { ...strict, description: 'Never a secret, token, hash or ciphertext' },
    ),
  },
  { ...strict, title: 'AuditEntry' },
);

export const AuditLogResponse = Type.Object(
  {
    auditLog: Type.Array(AuditEntry, { description: 'Newest first' }),
    nextCursor: ListKeysResponse.properties.nextCursor,
  },
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
    keyCount: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'rate_limit_in_use: keys bound to the plan; consumer_has_keys: keys the consumer holds',
      }),
    ),
    consumerCount: Type.Optional(
      Type.Integer({ minimum: 0, description: 'rate_limit_in_use only: consumers bound to the plan' }),
    ),
  },
  { ...strict, title: 'Error' },
);

/** The proxy's 429 body (documented here; the proxy writes it). */
export const RateLimitExceededResponse = Type.Object(
  {
    error: Type.String(),
    code: Type.Literal('rate_limit_exceeded'),
    limit: Type.Integer({ minimum: 1 }),
    period: PeriodSchema,
    remaining: Type.Literal(0),
    resetTime: IsoTimestamp,
    name: ScopedLimitName,
    scope: LimitScope,
  },
  {
    ...strict,
    title: 'RateLimitExceeded',
    description:
      'The refusing limit whose window ends last: `resetTime` is the earliest moment a retry can succeed',
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
