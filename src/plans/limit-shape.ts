/**
 * What a plan's limits and costs and a balance's refill must hold that their JSON Schema cannot say. The
 * management API refuses a body with these problems (400), and `tollgate apply` refuses a file with
 * them before any change: @tollgate/client ships this file as written (scripts/client-copies.mjs), so
 * a file the dry run accepts is one the API accepts. It imports nothing, so the copy stands alone.
 */

/** A problem at `path` within the object checked. */
export interface ShapeProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** A limit as a body or a file declares it. */
export interface DeclaredLimit {
  readonly period?: string | null;
  readonly name?: string;
  readonly algorithm?: string;
  readonly burst?: number;
  readonly match?: object;
  readonly per?: string;
}

/** A plan's cost entry as a body or a file declares it. */
export interface DeclaredCost {
  readonly cost?: number;
  readonly reserve?: object;
  readonly settle?: object;
  readonly settleMax?: number;
}

/**
 * A cost without `settle` is its `cost`; with it, `cost` or `reserve` is the reservation (not both),
 * and `reserve` and `settleMax` mean nothing without it.
 */
export function costShapeProblems(cost: DeclaredCost): ShapeProblem[] {
  if (cost.settle === undefined)
    return [
      ...(cost.cost === undefined ? [{ path: ['cost'], message: 'is required without settle' }] : []),
      ...(['reserve', 'settleMax'] as const)
        .filter((field) => cost[field] !== undefined)
        .map((field) => ({ path: [field], message: 'needs settle: it bounds what settle reads' })),
    ];
  return cost.cost !== undefined && cost.reserve !== undefined
    ? [{ path: ['reserve'], message: 'cannot come with cost: either is the reservation' }]
    : [];
}

/** A plan's limit fields as declared: the seed's `limit` and `period`, or `limits`. */
export interface DeclaredPlanLimits {
  readonly limit?: number;
  readonly period?: string | null;
  readonly limits?: readonly DeclaredLimit[];
}

/** `limit` and `period` both (the seed's one fixed limit), or `limits` alone. */
export function planLimitFieldProblems(plan: DeclaredPlanLimits): ShapeProblem[] {
  if (plan.limits !== undefined)
    return plan.limit === undefined && plan.period === undefined
      ? []
      : [{ path: ['limits'], message: 'cannot come with limit or period' }];
  return (['limit', 'period'] as const)
    .filter((field) => plan[field] === undefined)
    .map((field) => ({ path: [field], message: 'is required (or send limits)' }));
}

/** A period but for a concurrency limit, which has none; a `burst` on a token bucket only. */
export function limitShapeProblems(limit: DeclaredLimit): ShapeProblem[] {
  const algorithm = limit.algorithm ?? 'fixed';
  const hasPeriod = limit.period !== undefined && limit.period !== null;
  const problems: ShapeProblem[] = [];
  if (algorithm === 'concurrency' && hasPeriod)
    problems.push({ path: ['period'], message: 'a concurrency limit has no period' });
  if (algorithm !== 'concurrency' && !hasPeriod) problems.push({ path: ['period'], message: 'is required' });
  if (algorithm !== 'tokenBucket' && limit.burst !== undefined)
    problems.push({ path: ['burst'], message: 'only a tokenBucket limit has a burst' });
  return problems;
}

/** The name a limit goes by: the one given, else its period (a concurrency limit's: `concurrency`). */
export const limitNameOf = (limit: DeclaredLimit): string =>
  limit.name ?? (limit.algorithm === 'concurrency' ? 'concurrency' : (limit.period ?? ''));

/** Each limit whose name, given or by default, an earlier limit of the plan already goes by. */
export function repeatedNameProblems(limits: readonly DeclaredLimit[]): ShapeProblem[] {
  const names = limits.map(limitNameOf);
  return names.flatMap((name, i) =>
    names.indexOf(name) < i ? [{ path: [i, 'name'], message: `repeats the name "${name}"` }] : [],
  );
}

/**
 * Each limit without a match whose period, algorithm and per an earlier one without a match has: the
 * two would count the same requests in one count, and the smaller would decide alone (two concurrency
 * limits, which have no period, count the same places when their per is the same).
 */
export function repeatedKindProblems(limits: readonly DeclaredLimit[]): ShapeProblem[] {
  const kinds = limits.map((limit) => {
    const algorithm = limit.algorithm ?? 'fixed';
    const period = algorithm === 'concurrency' ? 'none' : (limit.period ?? 'none');
    return limit.match === undefined ? `${period}, ${algorithm}, ${limit.per ?? 'key'}` : undefined;
  });
  return kinds.flatMap((kind, i) =>
    kind !== undefined && kinds.indexOf(kind) < i
      ? [
          {
            path: [i],
            message: `repeats the period, algorithm and per of another limit without a match (${kind})`,
          },
        ]
      : [],
  );
}

/** A day of the month given to a daily refill, which has none. */
export function refillShapeProblems(
  refill: { readonly interval: string; readonly dayOfMonth?: number } | null | undefined,
): ShapeProblem[] {
  return refill?.interval === 'day' && refill.dayOfMonth !== undefined
    ? [{ path: ['dayOfMonth'], message: 'applies to a monthly refill only' }]
    : [];
}
