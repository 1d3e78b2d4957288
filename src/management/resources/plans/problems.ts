/**
 * What a plan's schema cannot state: a reserved id, limits that repeat a name or count the same
 * requests twice, matches with a dot segment; and the limits a valid create or PATCH body sets.
 */
import {
  BUCKET_PERIOD_MS,
  BUCKET_PERIODS,
  isConcurrency,
  ruleOf,
  type CostRule,
  type LimitInput,
  type LimitRule,
} from '../../../plans/plan.js';
import {
  costShapeProblems,
  limitShapeProblems,
  planLimitFieldProblems,
  repeatedKindProblems,
  repeatedNameProblems,
  type ShapeProblem,
} from '../../../plans/limit-shape.js';
import type { RequestMatch } from '../../../plans/request-match.js';
import { hasDotSegment } from '../../../proxy/request-target.js';
import type { ValidationDetail } from '../../schemas.js';
import { invalid } from '../../validation.js';
import type { CreatePlanRequest, UpdatePlanRequest } from './schemas.js';

/** `create` is the path of plan creation, so no plan may be called that. */
const RESERVED_PLAN_IDS = new Set(['create']);

/** A new plan: not under a reserved id, and its limits well formed. */
export function createPlanProblems(body: CreatePlanRequest): ValidationDetail[] {
  return [
    ...(RESERVED_PLAN_IDS.has(body.rateLimitId)
      ? [{ field: 'rateLimitId', message: `"${body.rateLimitId}" is reserved` }]
      : []),
    ...updatePlanProblems(body),
  ];
}

/** A plan's limits and costs as sent. */
export const updatePlanProblems = (body: UpdatePlanRequest): ValidationDetail[] => [
  ...limitProblems(body),
  ...costProblems(body),
];

interface PlanLimitsInput {
  readonly limit?: number;
  readonly period?: LimitInput['period'];
  readonly limits?: readonly LimitInput[];
}

/** Shared problems (plans/limit-shape.ts) as details, their fields under `prefix`. */
const detailsOf = (problems: readonly ShapeProblem[], prefix: string): ValidationDetail[] =>
  problems.map(({ path, message }) => ({
    field: [prefix, ...path].filter((p) => p !== '').join('.'),
    message,
  }));

/** A new plan needs `limit` and `period`, unless it sends `limits`. */
export const requiredLimitFields = (body: Readonly<Record<string, unknown>>): ValidationDetail[] =>
  body.limits !== undefined ? [] : detailsOf(planLimitFieldProblems(body), '');

/**
 * A plan's limits as sent: `limits`, or the seed's `limit` and `period`, never both shapes; names
 * unique within the plan, and no two limits without a match of one period, algorithm and per
 * (plans/limit-shape.ts); matches well formed.
 */
export function limitProblems({ limit, period, limits }: PlanLimitsInput): ValidationDetail[] {
  if (limits === undefined) return [];
  const details = detailsOf(planLimitFieldProblems({ limit, period, limits }), '');
  limits.forEach((input, i) => details.push(...algorithmProblems(input, `limits.${i}`)));
  if (details.length > 0) return details;
  return [
    ...detailsOf([...repeatedNameProblems(limits), ...repeatedKindProblems(limits)], 'limits'),
    ...limits.flatMap((input, i) => matchProblems(input.match, `limits.${i}.match`)),
  ];
}

/**
 * What an algorithm asks of a limit: its shape (plans/limit-shape.ts: a period but for a concurrency
 * limit, a `burst` on a token bucket only); a token bucket's period of a day at most, and a refill
 * whose arithmetic stays exact (limits/token-bucket.ts).
 */
function algorithmProblems(input: LimitInput, field: string): ValidationDetail[] {
  const details = detailsOf(limitShapeProblems(input), field);
  if (input.algorithm !== 'tokenBucket' || input.period === undefined || input.period === null)
    return details;
  if (!(BUCKET_PERIODS as readonly string[]).includes(input.period))
    return [{ field: `${field}.period`, message: `a token bucket refills per ${BUCKET_PERIODS.join(', ')}` }];
  const periodMs = BUCKET_PERIOD_MS[input.period as keyof typeof BUCKET_PERIOD_MS];
  if ((input.limit + 1) * periodMs > Number.MAX_SAFE_INTEGER)
    details.push({
      field: `${field}.limit`,
      message: `a token bucket refills at most ${Math.floor(Number.MAX_SAFE_INTEGER / periodMs) - 1} per ${input.period}`,
    });
  return details;
}

/**
 * A match's path prefix without a dot segment, as a route's (the proxy refuses such request paths);
 * `caseInsensitive` only beside the prefix it qualifies.
 */
export function matchProblems(match: RequestMatch | undefined, field: string): ValidationDetail[] {
  if (match?.pathPrefix === undefined)
    return match?.caseInsensitive === undefined
      ? []
      : [{ field: `${field}.caseInsensitive`, message: 'needs a pathPrefix: it says how that is compared' }];
  return hasDotSegment(match.pathPrefix)
    ? [{ field: `${field}.pathPrefix`, message: 'must not contain a . or .. segment' }]
    : [];
}

/** A plan's costs as sent: their matches well formed, and each priced one way (plans/limit-shape.ts). */
export const costProblems = ({ costs }: { costs?: readonly CostRule[] }): ValidationDetail[] =>
  (costs ?? []).flatMap((rule, i) => [
    ...matchProblems(rule.match, `costs.${i}.match`),
    ...detailsOf(costShapeProblems(rule), `costs.${i}`),
  ]);

/** The limits of a validated create body. */
export function limitsOfCreate(body: CreatePlanRequest): LimitRule[] {
  return body.limits?.map(ruleOf) ?? [ruleOf({ limit: body.limit!, period: body.period! })];
}

/**
 * The limits a validated PATCH body sets, given the plan's `current` ones; undefined when it leaves
 * them. `limit` and `period` change a plan of one limit (keeping its name when chosen, its
 * algorithm, burst and per); a plan of several takes `limits`.
 */
export function limitsOfUpdate(
  body: UpdatePlanRequest,
  current: readonly LimitRule[],
): LimitRule[] | undefined {
  if (body.limits !== undefined) return body.limits.map(ruleOf);
  if (body.limit === undefined && body.period === undefined) return undefined;
  if (current.length > 1) {
    const field = body.limit !== undefined ? 'limit' : 'period';
    throw invalid([
      { field, message: `applies to a plan of one limit; this plan has ${current.length}: send limits` },
    ]);
  }
  const [only] = current as [LimitRule];
  const changed: LimitInput = {
    limit: body.limit ?? only.limit,
    period: isConcurrency(only) ? body.period : (body.period ?? only.period),
    name: only.name === only.period ? undefined : only.name,
    algorithm: only.algorithm,
    ...(only.burst !== undefined && { burst: only.burst }),
    ...(only.per !== undefined && { per: only.per }),
  };
  const problems = algorithmProblems(changed, 'limits.0');
  if (problems.length > 0)
    throw invalid(
      problems.map(({ field, message }) => ({ field: field.slice('limits.0.'.length), message })),
    );
  return [ruleOf(changed)];
}
