/** Plans' limits and costs as the console edits and shows them (docs/guides/plans.md, docs/guides/credits.md). */
import type { Per, Period, Plan, PlanCost, PlanLimit, PlanLimitInput, RequestMatch } from './types';

export {
  ALGORITHMS,
  BUCKET_PERIODS,
  MAX_COST,
  MAX_COSTS,
  MAX_LIMITS,
  MIN_COST,
  PERS,
} from '../../src/plans/plan.js';
export { HTTP_METHODS } from '../../src/plans/route.js';

/**
 * Every limit of a plan. A replica of the previous version (during a rolling upgrade) answers the
 * seed's shape only: its one limit is then read from `limit` and `period`.
 */
export function limitsOf(plan: Pick<Plan, 'limit' | 'period' | 'limits'>): readonly PlanLimit[] {
  return plan.limits?.length
    ? plan.limits
    : [
        {
          name: plan.period ?? 'concurrency',
          limit: plan.limit,
          period: plan.period,
          algorithm: 'fixed',
          per: 'key',
        },
      ];
}

/** One fixed limit of every request that carries its default name: what the seed's `{limit, period}` means. */
function isSeedShaped(limits: readonly PlanLimitInput[]): boolean {
  const only = limits[0];
  return (
    limits.length === 1 &&
    only !== undefined &&
    (only.name ?? only.period) === only.period &&
    (only.algorithm ?? 'fixed') === 'fixed' &&
    only.match === undefined &&
    (only.per ?? 'key') === 'key'
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
  if (
    only &&
    only.period !== null &&
    isSeedShaped(limits) &&
    (current === undefined || isSeedShaped(current))
  )
    return { limit: only.limit, period: only.period };
  return {
    limits: limits.map((l) => ({
      ...(l.name && l.name !== (l.period ?? 'concurrency') ? { name: l.name } : {}),
      limit: l.limit,
      // A concurrency limit has no period.
      period: l.algorithm === 'concurrency' ? null : l.period,
      ...(l.algorithm && l.algorithm !== 'fixed' ? { algorithm: l.algorithm } : {}),
      ...(l.algorithm === 'tokenBucket' && l.burst !== undefined ? { burst: l.burst } : {}),
      ...(l.match ? { match: l.match } : {}),
      ...(l.per && l.per !== 'key' ? { per: l.per } : {}),
    })),
  };
}

/** Whom a limit per visitor counts, as the console names it. */
export const VISITOR_LABELS = { clientAddress: 'client address', customer: 'customer id' } as const;

/** What a limit per visitor shows for "left now": each visitor has a count of its own, none is the key's. */
export const eachVisitor = (per: Per): string => (per === 'key' ? '' : `each ${VISITOR_LABELS[per]} apart`);

/** `routes search, reports; GET, POST; under /v1` */
export function describeMatch(match: RequestMatch): string {
  return [
    match.routeIds && `route${match.routeIds.length === 1 ? '' : 's'} ${match.routeIds.join(', ')}`,
    match.methods && match.methods.join(', '),
    match.pathPrefix && `under ${match.pathPrefix}${match.caseInsensitive ? ' (any case)' : ''}`,
    match.body && `body ${match.body.pointer} is ${match.body.values.join(' or ')}`,
  ]
    .filter(Boolean)
    .join('; ');
}

/** `costs 5`, or for a cost the backend reports: `settled by the openai preset, reserving /max_tokens + 1,000`. */
export function describeCost(cost: PlanCost): string {
  const settle = cost.settle;
  if (settle === undefined) return `costs ${(cost.cost ?? 1).toLocaleString('en')}`;
  const from =
    settle.header !== undefined
      ? `header ${settle.header}`
      : settle.json !== undefined
        ? settle.json.join(' + ')
        : `the ${settle.preset} preset`;
  const reserve = cost.reserve;
  const reserving = reserve
    ? `${reserve.pointer}${reserve.add ? ` + ${reserve.add.toLocaleString('en')}` : ''} (else ${reserve.default.toLocaleString('en')})`
    : (cost.cost ?? 1).toLocaleString('en');
  return `settled from ${from}, reserving ${reserving}`;
}

/** `burst: 10 per second, sliding`, `5 per second, bursts of 20`, `4 in flight`. */
export function describeLimit(limit: PlanLimitInput): string {
  const count = limit.limit.toLocaleString('en');
  const per = limit.period === null ? `${count} in flight` : `${count} per ${limit.period}`;
  const how =
    limit.algorithm === 'sliding'
      ? ', sliding'
      : limit.algorithm === 'tokenBucket'
        ? `, bursts of ${(limit.burst ?? limit.limit).toLocaleString('en')}`
        : '';
  const only = limit.match ? ` (only ${describeMatch(limit.match)})` : '';
  const visitor = limit.per && limit.per !== 'key' ? `, each ${VISITOR_LABELS[limit.per]}` : '';
  const named = limit.name && limit.name !== (limit.period ?? 'concurrency');
  return (named ? `${limit.name}: ${per}` : per) + how + visitor + only;
}
