/**
 * The requests and answers of the rate limit plan operations, and where a limit stands (a key's or
 * consumer's detail, verify, and the proxy's 429 body, which the document describes).
 */
import { type Static, Type } from '@sinclair/typebox';
import { RequestMatchSchema } from '../../request-match-schemas.js';
import { CostRuleSchema, PlanUnit } from './cost-schemas.js';
import {
  Count,
  IsoTimestamp,
  KeyId,
  MAX_DESCRIPTION_LENGTH,
  NextCursor,
  NO_NUL,
  pageFields,
  RateLimitId,
  strict,
} from '../../schemas.js';
import { type Algorithm, ALGORITHMS, MAX_COSTS, MAX_LIMITS, type Per, PERS } from '../../../plans/plan.js';
import { type Period, PERIODS } from '../../../plans/window.js';

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
    '`fixed` (default): UTC-aligned windows, exactly `limit` per window across replicas. `sliding`: never more than `limit` in any span of one period across replicas; a request may be refused for requests up to one period and a twentieth old. `tokenBucket`: a bucket of `burst` units refilled continuously at `limit` per `period` (second, minute, hour or day); over any interval of length T at most `burst + limit × T / period` units are admitted across replicas. `concurrency`: at most `limit` requests in flight at once across replicas, one place per request whatever its cost; no `period` (see docs/guides/plans.md)',
});
const Burst = Type.Integer({
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  description:
    'A token bucket\'s size: the units it holds when full, 1 to 2^53-1. Default: `limit`. Only with `algorithm: "tokenBucket"`',
});
const NullablePeriod = Type.Union([PeriodSchema, Type.Null()], {
  description: 'The period; null for a concurrency limit, which has none',
});
export const PerSchema = Type.Unsafe<Per>({
  type: 'string',
  enum: [...PERS],
  description:
    "Whom the limit counts: `key` (default), the key (or the consumer, for a consumer's plan) as a whole; `clientAddress`, each client address apart (an IPv6 address by its /64); `customer`, each customer id apart (the customer-id header, or a token's `sub`). Requests with no address or no customer id share one count (docs/guides/browser.md)",
});
const LimitMatch = {
  ...RequestMatchSchema,
  description:
    'The limit counts only the requests it matches (every condition given must hold); absent: every request. A limit with a match counts in a count of its own',
};
const LimitInput = Type.Object(
  {
    limit: PlanLimit,
    period: Type.Optional(
      Type.Union([PeriodSchema, Type.Null()], {
        description: `${PeriodSchema.description}. Required, but for a concurrency limit, which takes none (absent or null)`,
      }),
    ),
    name: Type.Optional(LimitName),
    algorithm: Type.Optional(AlgorithmSchema),
    burst: Type.Optional(Burst),
    match: Type.Optional(LimitMatch),
    per: Type.Optional(PerSchema),
  },
  { ...strict, title: 'PlanLimitInput' },
);
const LimitsInput = Type.Array(LimitInput, {
  minItems: 1,
  maxItems: MAX_LIMITS,
  description: `1 to ${MAX_LIMITS} limits, each checked and counted for every request it applies to; names unique, and no two limits without a match of the same period, algorithm and per`,
});
const PlanLimitSchema = Type.Object(
  {
    name: LimitName,
    limit: PlanLimit,
    period: NullablePeriod,
    algorithm: AlgorithmSchema,
    burst: Type.Optional({
      ...Burst,
      description: "A token bucket's size in units (present for token buckets only)",
    }),
    match: Type.Optional(LimitMatch),
    per: PerSchema,
  },
  { ...strict, title: 'PlanLimit' },
);
const Costs = Type.Array(CostRuleSchema, {
  maxItems: MAX_COSTS,
  description: `At most ${MAX_COSTS}. The first that matches a request gives its cost; a request none matches costs 1 (a key's plan is asked first, then its consumer's)`,
});

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
    unit: Type.Optional(PlanUnit),
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
    unit: Type.Optional(PlanUnit),
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

export const PlanResponse = Type.Object(
  {
    rateLimitId: RateLimitId,
    description: Type.String(),
    limit: { ...PlanLimit, description: 'The first limit of `limits`' },
    period: {
      ...NullablePeriod,
      description: 'The period of the first limit of `limits` (null: a concurrency limit)',
    },
    createdAt: IsoTimestamp,
    limits: Type.Array(PlanLimitSchema, { minItems: 1, maxItems: MAX_LIMITS }),
    costs: Costs,
    unit: PlanUnit,
    lastUpdated: IsoTimestamp,
    keyCount: Type.Integer({ minimum: 0, description: 'Keys bound to the plan' }),
    consumerCount: Type.Integer({ minimum: 0, description: 'Consumers bound to the plan' }),
  },
  { ...strict, title: 'PlanResponse' },
);

export const ListPlansResponse = Type.Object(
  {
    rateLimits: Type.Array(PlanResponse, { description: 'Oldest first' }),
    nextCursor: NextCursor,
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

const resetTime = {
  ...IsoTimestamp,
  description:
    'A fixed limit: the end of the current window, when the count is cleared. A sliding limit: when the oldest requests it counts stop counting. A token bucket: when it holds one unit',
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
  period: NullablePeriod,
  remaining: { ...Count, description: 'Units it still allows; a concurrency limit: places free now' },
  resetTime: Type.Union([IsoTimestamp, Type.Null()], {
    description: `${resetTime.description}. A concurrency limit: null (a place frees whenever a request ends)`,
  }),
  scope: LimitScope,
  per: PerSchema,
};
export const RateLimitState = Type.Object(
  {
    limit: Type.Integer({
      minimum: 1,
      description:
        'Of the limit with the fewest requests left, of those with one count and one window: limits per visitor and concurrency limits are left out when others exist. A plan of only such limits shows what a new visitor would have: the least capacity of its limits (a concurrency limit of the key as a whole: its places free now)',
    }),
    remaining: { ...Count, description: 'Its remaining' },
    resetTime: {
      ...resetTime,
      description: `${resetTime.description}. A plan of only limits per visitor or concurrency limits: the time of the answer`,
    },
    limits: Type.Array(
      Type.Object(
        {
          ...limitStateFields,
          remaining: Type.Union([Count, Type.Null()], {
            description:
              'What it still allows; null for a limit per visitor (there is no one visitor: each has a count of its own)',
          }),
        },
        { ...strict, title: 'LimitState' },
      ),
      { description: "Every limit that applies: the key's plan in its order, then its consumer's" },
    ),
  },
  { ...strict, title: 'RateLimitState' },
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
    per: PerSchema,
  },
  {
    ...strict,
    title: 'RateLimitExceeded',
    description:
      'The refusing limit whose window ends last: `resetTime` is the earliest moment a retry can succeed',
  },
);

/** The proxy's 429 body of a concurrency limit (documented here; the proxy writes it). */
export const ConcurrencyLimitExceededResponse = Type.Object(
  {
    error: Type.String(),
    code: Type.Literal('concurrency_limit_exceeded'),
    limit: Type.Integer({ minimum: 1, description: 'Requests the limit allows in flight at once' }),
    name: ScopedLimitName,
    scope: LimitScope,
    per: PerSchema,
  },
  {
    ...strict,
    title: 'ConcurrencyLimitExceeded',
    description: 'As many requests as the limit allows are in flight; `Retry-After: 1`',
  },
);

export type ListPlansQuery = Static<typeof ListPlansQuery>;
export type PlanResponse = Static<typeof PlanResponse>;
export type ListPlansResponse = Static<typeof ListPlansResponse>;
export type DeletePlanResponse = Static<typeof DeletePlanResponse>;
export type RemovePlanResponse = Static<typeof RemovePlanResponse>;
export type CreatePlanRequest = Static<typeof CreatePlanRequest>;
export type UpdatePlanRequest = Static<typeof UpdatePlanRequest>;
export type ApplyPlanRequest = Static<typeof ApplyPlanRequest>;
export type ApplyPlanResponse = Static<typeof ApplyPlanResponse>;
