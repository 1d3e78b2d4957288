import type { RequestMatch } from './request-match.js';
import { isPeriod, type Period } from './window.js';

export const ALGORITHMS = ['fixed', 'sliding'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/** A plan holds one to this many limits (docs/guides/plans.md). */
export const MAX_LIMITS = 4;

/** One limit of a plan: at most `limit` admitted requests per `period`, in fixed UTC windows or sliding. */
export interface LimitRule {
  /** Names the limit in the RateLimit headers and the 429 body; unique within a plan. */
  readonly name: string;
  readonly limit: number;
  readonly period: Period;
  readonly algorithm: Algorithm;
  /** Counts only the requests it matches (docs/decisions/0034); absent: every request. */
  readonly match?: RequestMatch;
}

/** The lowest and highest cost a plan may give a request (docs/guides/credits.md). */
export const MIN_COST = 1;
export const MAX_COST = 10_000;
/** A plan prices requests with at most this many costs. */
export const MAX_COSTS = 32;

/** What a request matching `match` costs, in the units every limit and balance counts. */
export interface CostRule {
  readonly match: RequestMatch;
  readonly cost: number;
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
}

/** A limit as a caller writes it: name and algorithm may be left to their defaults. */
export interface LimitInput {
  readonly limit: number;
  readonly period: Period;
  readonly name?: string;
  readonly algorithm?: Algorithm;
  readonly match?: RequestMatch;
}

/** The limit with its defaults: named after its period, in fixed windows, counting every request. */
export function ruleOf({ limit, period, name = period, algorithm = 'fixed', match }: LimitInput): LimitRule {
  return match === undefined ? { name, limit, period, algorithm } : { name, limit, period, algorithm, match };
}

/** The one limit the seed's plans hold: fixed, named after its period. */
export function isSeedLimit(limits: readonly LimitRule[]): boolean {
  const [only] = limits;
  return (
    limits.length === 1 &&
    only!.algorithm === 'fixed' &&
    only!.name === only!.period &&
    only!.match === undefined
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
      .map((l) => `${l.limit}/${l.period}/${l.algorithm}${countsOwnRequests(l) ? `/${l.name}` : ''}`)
      .join(','),
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
