/** Plans' limits as the console edits and shows them (contract section 7). */
import type { Period, Plan, PlanLimit, PlanLimitInput } from './types';

export { ALGORITHMS, MAX_LIMITS } from '../../src/plans/plan.js';

/**
 * Every limit of a plan. A replica of the previous version (during a rolling upgrade) answers the
 * seed's shape only: its one limit is then read from `limit` and `period`.
 */
export function limitsOf(plan: Pick<Plan, 'limit' | 'period' | 'limits'>): readonly PlanLimit[] {
  return plan.limits?.length
    ? plan.limits
    : [{ name: plan.period, limit: plan.limit, period: plan.period, algorithm: 'fixed' }];
}

/** One fixed limit that carries its default name: what the seed's `{limit, period}` means. */
function isSeedShaped(limits: readonly PlanLimitInput[]): boolean {
  const only = limits[0];
  return (
    limits.length === 1 &&
    only !== undefined &&
    (only.name ?? only.period) === only.period &&
    (only.algorithm ?? 'fixed') === 'fixed'
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
    })),
  };
}

export function describeLimit(limit: PlanLimitInput): string {
  const per = `${limit.limit.toLocaleString('en')} per ${limit.period}`;
  const sliding = limit.algorithm === 'sliding' ? ', sliding' : '';
  return limit.name && limit.name !== limit.period ? `${limit.name}: ${per}${sliding}` : per + sliding;
}
