import type { RequestMatch } from './request-match.js';
import type { ReserveRule, SettleRule } from './usage-pricing.js';
import { isPeriod, type Period } from './window.js';

export const ALGORITHMS = ['fixed', 'sliding', 'tokenBucket', 'concurrency'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/** Whom a limit counts for: the key (or consumer) as a whole, or each visitor under it (limits/visitor.ts). */
export const PERS = ['key', 'clientAddress', 'customer'] as const;
export type Per = (typeof PERS)[number];

/** The periods a token bucket refills over (docs/guides/plans.md). */
export const BUCKET_PERIODS = ['second', 'minute', 'hour', 'day'] as const satisfies readonly Period[];

/**
 * A concurrency limit has no period: its rule carries this one only so that code keyed by period
 * (counts by kind) has a value; every answer shows `period: null` (shownPeriod).
 */
const CONCURRENCY_PERIOD: Period = 'second';

/** A plan holds one to this many limits (docs/guides/plans.md). */
export const MAX_LIMITS = 4;

/** One limit of a plan: at most `limit` admitted requests per `period`, in fixed UTC windows or sliding. */
export interface LimitRule {
  /** Names the limit in the RateLimit headers and the 429 body; unique within a plan. */
  readonly name: string;
  readonly limit: number;
  readonly period: Period;
  readonly algorithm: Algorithm;
  /** A token bucket's size in units (docs/decisions/0095); absent for the other algorithms. */
  readonly burst?: number;
  /** Counts only the requests it matches (docs/decisions/0034); absent: every request. */
  readonly match?: RequestMatch;
  /** Counts each visitor apart (docs/decisions/0090); absent: the key or consumer as a whole (`key`). */
  readonly per?: Exclude<Per, 'key'>;
}

/** A concurrency limit counts requests in flight: places taken and given back, no window. */
export const isConcurrency = (rule: LimitRule): boolean => rule.algorithm === 'concurrency';

/** The period as answers show it: null for a concurrency limit. */
export const shownPeriod = (rule: LimitRule): Period | null => (isConcurrency(rule) ? null : rule.period);

/** The most units a limit holds at once: a token bucket's burst, else its limit. */
export const capacityOf = (rule: LimitRule): number => rule.burst ?? rule.limit;

/** Milliseconds in a token bucket's period. */
export const BUCKET_PERIOD_MS: Readonly<Record<(typeof BUCKET_PERIODS)[number], number>> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};

/** The lowest and highest cost a plan may give a request (docs/guides/credits.md). */
export const MIN_COST = 1;
export const MAX_COST = 10_000;
/** A plan prices requests with at most this many costs. */
export const MAX_COSTS = 32;

/**
 * What a request matching `match` costs, in the units every limit and balance counts: `cost`, or, when
 * the backend reports what it used (`settle`), a reservation (`cost`, or `reserve` from the request's
 * body) charged before forwarding and settled to the reported units after, both capped at `settleMax`.
 */
export interface CostRule {
  readonly match: RequestMatch;
  /** Required but beside `settle`, where it is the reservation (default 1) unless `reserve` says. */
  readonly cost?: number;
  readonly reserve?: ReserveRule;
  readonly settle?: SettleRule;
  readonly settleMax?: number;
}

/**
 * The limits that apply to one key, checked and counted together: a request is admitted only when
 * every limit has room, and is then counted in all of them.
 */
export interface Plan {
  readonly limits: readonly LimitRule[];
  /** The first that matches gives a request its cost; none: it costs 1. */
  readonly costs: readonly CostRule[];
  /**
   * The limits as one string: a key's counters are grouped by it, so a plan changed within a window
   * starts a new group (whose limits still share the windows' counts) rather than mixing leases taken
   * under the old limits with the new ones.
   */
  readonly tag: string;
  /** Some limit counts each visitor apart: a request's visitor is then worked out (limits/visitor.ts). */
  readonly perVisitor: boolean;
  /**
   * The plan a request's selection of limits (plans/pricing.ts) was narrowed from; absent: this plan is
   * whole. A switch of plan is told by the whole plan's tag (limits/core/plan-switch.ts).
   */
  readonly whole?: Plan;
}

/** The whole plan `plan` is (or was narrowed from). */
export const wholeOf = (plan: Plan): Plan => plan.whole ?? plan;

/** A limit as a caller writes it: name and algorithm may be left to their defaults. */
export interface LimitInput {
  readonly limit: number;
  /** Required but for a concurrency limit, which has none (absent or null). */
  readonly period?: Period | null;
  readonly name?: string;
  readonly algorithm?: Algorithm;
  readonly burst?: number;
  readonly match?: RequestMatch;
  readonly per?: Per;
}

/**
 * The limit with its defaults: named after its period (a concurrency limit `concurrency`), in fixed
 * windows, counting every request of the key; a token bucket's burst defaults to its limit.
 */
export function ruleOf(input: LimitInput): LimitRule {
  const { limit, algorithm = 'fixed', match, per = 'key' } = input;
  const period = algorithm === 'concurrency' ? CONCURRENCY_PERIOD : input.period!;
  const name = input.name ?? (algorithm === 'concurrency' ? 'concurrency' : period);
  const rule: LimitRule = { name, limit, period, algorithm };
  return {
    ...rule,
    ...(algorithm === 'tokenBucket' && { burst: input.burst ?? limit }),
    ...(match !== undefined && { match }),
    ...(per !== 'key' && { per }),
  };
}

/** Whom a limit counts for (`key` when it counts the key or consumer as a whole). */
export const perOf = (rule: LimitRule): Per => rule.per ?? 'key';

/** The one limit the seed's plans hold: fixed, named after its period. */
export function isSeedLimit(limits: readonly LimitRule[]): boolean {
  const [only] = limits;
  return (
    limits.length === 1 &&
    only!.algorithm === 'fixed' &&
    only!.name === only!.period &&
    only!.match === undefined &&
    only!.per === undefined
  );
}

/**
 * A limit with a match counts in counts of its own, by name (limits/limiter-keys.ts); the others of a
 * period and algorithm all count every request, in one count.
 */
export const countsOwnRequests = (rule: LimitRule): boolean => rule.match !== undefined;

export function planOf(limits: readonly LimitRule[], costs: readonly CostRule[] = []): Plan {
  return {
    limits,
    costs,
    tag: limits
      .map(
        (l) =>
          `${l.limit}/${l.period}/${l.algorithm}${l.burst === undefined ? '' : `/${l.burst}`}${countsOwnRequests(l) ? `/${l.name}` : ''}${l.per === undefined ? '' : `/${l.per}`}`,
      )
      .join(','),
    perVisitor: limits.some((l) => l.per !== undefined),
  };
}

/**
 * `1000/hour` or `10/second,10000/day` (DEFAULT_RATE_LIMIT): fixed limits named after their periods;
 * `undefined` when malformed, when a period repeats, or with more than MAX_LIMITS limits.
 */
export function parsePlan(text: string): Plan | undefined {
  const limits: LimitRule[] = [];
  for (const part of text.split(',')) {
    const match = /^\s*(\d{1,16})\s*\/\s*([a-z]+)\s*$/.exec(part);
    if (!match) return undefined;
    const limit = Number(match[1]);
    const period = match[2]!;
    if (!isPeriod(period) || limit < 1 || !Number.isSafeInteger(limit)) return undefined;
    if (limits.some((l) => l.period === period)) return undefined;
    limits.push(ruleOf({ limit, period }));
  }
  return limits.length <= MAX_LIMITS ? planOf(limits) : undefined;
}
