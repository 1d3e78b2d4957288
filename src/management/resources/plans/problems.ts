/**
 * What a plan's schema cannot state: a reserved id, limits that repeat a name or count the same
 * requests twice, matches with a dot segment; and the limits a valid create or PATCH body sets.
 */
import {
  countsOwnRequests,
  ruleOf,
  type CostRule,
  type LimitInput,
  type LimitRule,
} from '../../../plans/plan.js';
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

/** A new plan needs `limit` and `period`, unless it sends `limits`. */
export function requiredLimitFields(body: Readonly<Record<string, unknown>>): ValidationDetail[] {
  if (body.limits !== undefined) return [];
  return ['limit', 'period']
    .filter((field) => body[field] === undefined)
    .map((field) => ({ field, message: 'is required (or send limits)' }));
}

/**
 * A plan's limits as sent: `limits`, or the seed's `limit` and `period`, never both shapes; names
 * unique within the plan, and no two limits without a match of one period and algorithm (they would
 * count the same requests in the same window, and the smaller would decide alone).
 */
export function limitProblems({ limit, period, limits }: PlanLimitsInput): ValidationDetail[] {
  if (limits === undefined) return [];
  const details: ValidationDetail[] = [];
  if (limit !== undefined || period !== undefined)
    details.push({ field: 'limits', message: 'cannot come with limit or period' });
  const rules = limits.map(ruleOf);
  rules.forEach((rule, i) => {
    if (rules.findIndex((r) => r.name === rule.name) < i)
      details.push({ field: `limits.${i}.name`, message: `repeats the name "${rule.name}"` });
    const sameKind = (r: LimitRule) =>
      !countsOwnRequests(r) && r.period === rule.period && r.algorithm === rule.algorithm;
    if (!countsOwnRequests(rule) && rules.findIndex(sameKind) < i) {
      details.push({
        field: `limits.${i}`,
        message: `repeats the period and algorithm of another limit without a match (${rule.period}, ${rule.algorithm})`,
      });
    }
    details.push(...matchProblems(rule.match, `limits.${i}.match`));
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

/** A plan's costs as sent: their matches well formed. */
export const costProblems = ({ costs }: { costs?: readonly CostRule[] }): ValidationDetail[] =>
  (costs ?? []).flatMap((rule, i) => matchProblems(rule.match, `costs.${i}.match`));

/** The limits of a validated create body. */
export function limitsOfCreate(body: CreatePlanRequest): LimitRule[] {
  return body.limits?.map(ruleOf) ?? [ruleOf({ limit: body.limit!, period: body.period! })];
}

/**
 * The limits a validated PATCH body sets, given the plan's `current` ones; undefined when it leaves
 * them. `limit` and `period` change a plan of one limit (keeping its name when chosen, and its
 * algorithm); a plan of several takes `limits`.
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
  return [
    ruleOf({
      limit: body.limit ?? only.limit,
      period: body.period ?? only.period,
      name: only.name === only.period ? undefined : only.name,
      algorithm: only.algorithm,
    }),
  ];
}
