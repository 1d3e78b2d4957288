/** Plans' limits and costs as the console edits and shows them (docs/guides/plans.md, docs/guides/credits.md). */
import type { Period, Plan, PlanLimit, PlanLimitInput, RequestMatch } from './types';

export { ALGORITHMS, MAX_COST, MAX_COSTS, MAX_LIMITS, MIN_COST } from '../../src/plans/plan.js';
export { HTTP_METHODS } from '../../src/plans/route.js';

/**
 * Every limit of a plan. A replica of the previous version (during a rolling upgrade) answers the
 * seed's shape only: its one limit is then read from `limit` and `period`.
 */
export function limitsOf(plan: Pick<Plan, 'limit' | 'period' | 'limits'>): readonly PlanLimit[] {
  return plan.limits?.length
    ? plan.limits
    : [{ name: plan.period, limit: plan.limit, period: plan.period, algorithm: 'fixed' }];
}

/** One fixed limit of every request that carries its default name: what the seed's `{limit, period}` means. */
function isSeedShaped(limits: readonly PlanLimitInput[]): boolean {
  const only = limits[0];
  return (
    limits.length === 1 &&
    only !== undefined &&
    (only.name ?? only.period) === only.period &&
    (only.algorithm ?? 'fixed') === 'fixed' &&
    only.match === undefined
  );
}

/**
 * The body fields that set a plan's limits: the seed's `{limit, period}` when the plan has exactly one
 * unnamed fixed limit, before the change (`current`, when editing) and after it; `limits` otherwise
 * (the API keeps an edited single limit's name and algorithm under `{limit, period}`, and refuses
 * them for a plan of several limits).
 */
export function limitsBody(
  limits: readonly PlanLimitInput[],
  current?: readonly PlanLimitInput[],
): { limit: number; period: Period } | { limits: PlanLimitInput[] } {
  const only = limits[0];
  if (only && isSeedShaped(limits) && (current === undefined || isSeedShaped(current)))
    return { limit: only.limit, period: only.period };
  return {
    limits: limits.map((l) => ({
      ...(l.name && l.name !== l.period ? { name: l.name } : {}),
      limit: l.limit,
      period: l.period,
      ...(l.algorithm === 'sliding' ? { algorithm: l.algorithm } : {}),
      ...(l.match ? { match: l.match } : {}),
    })),
  };
}

/** `routes search, reports; GET, POST; under /v1` */
export function describeMatch(match: RequestMatch): string {
  return [
    match.routeIds && `route${match.routeIds.length === 1 ? '' : 's'} ${match.routeIds.join(', ')}`,
    match.methods && match.methods.join(', '),
    match.pathPrefix && `under ${match.pathPrefix}${match.caseInsensitive ? ' (any case)' : ''}`,
  ]
    .filter(Boolean)
    .join('; ');
}

export function describeLimit(limit: PlanLimitInput): string {
  const per = `${limit.limit.toLocaleString('en')} per ${limit.period}`;
  const sliding = limit.algorithm === 'sliding' ? ', sliding' : '';
  const only = limit.match ? ` (only ${describeMatch(limit.match)})` : '';
  return (limit.name && limit.name !== limit.period ? `${limit.name}: ${per}` : per) + sliding + only;
}
