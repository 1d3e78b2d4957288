import { isSeedLimit, ruleOf, type CostRule, type LimitRule } from '../plans/plan.js';
import { normalisedMatch } from '../plans/request-match.js';
import type { Period } from '../plans/window.js';

/**
 * How a plan's limits are stored (sql/013): the first limit in `limit` and `period`, as the seed's
 * plans had them, and all of them as JSON in `limits` unless they are the seed's one fixed limit.
 */
export function limitColumns(limits: readonly LimitRule[]) {
  return {
    limit: limits[0]!.limit,
    period: limits[0]!.period,
    limits: isSeedLimit(limits) ? null : JSON.stringify(limits),
  };
}

/**
 * A plan's stored columns as its limits: the JSON when there is one, else the seed's one limit. Path
 * prefixes come out in normal form, as request paths are compared (one stored earlier may not be).
 */
export function limitsOf(row: {
  limit: string | number;
  period: string;
  limits: string | null;
}): LimitRule[] {
  if (row.limits !== null)
    return (JSON.parse(row.limits) as LimitRule[]).map((rule) =>
      rule.match === undefined ? rule : { ...rule, match: normalisedMatch(rule.match) },
    );
  return [ruleOf({ limit: Number(row.limit), period: row.period as Period })];
}

/** A plan's costs as stored (sql/060): JSON, or null for none. */
export const costsColumn = (costs: readonly CostRule[]): string | null =>
  costs.length === 0 ? null : JSON.stringify(costs);

/** A plan's stored costs, their prefixes normalised; none when the column is null (or the plan is a left join's missing row). */
export const costsOf = (column: string | null): CostRule[] =>
  column === null
    ? []
    : (JSON.parse(column) as CostRule[]).map((rule) => ({ ...rule, match: normalisedMatch(rule.match) }));
