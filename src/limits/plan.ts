import { isPeriod, type Period } from './window.js';

export const ALGORITHMS = ['fixed', 'sliding'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/** A plan holds one to this many limits (contract section 7). */
export const MAX_LIMITS = 4;

/** One limit of a plan: at most `limit` admitted requests per `period`, in fixed UTC windows or sliding. */
export interface LimitRule {
  /** Names the limit in the RateLimit headers and the 429 body; unique within a plan. */
  readonly name: string;
  readonly limit: number;
  readonly period: Period;
  readonly algorithm: Algorithm;
}

/**
 * The limits that apply to one key, checked and counted together: a request is admitted only when
 * every limit has room, and is then counted in all of them.
 */
export interface Plan {
  readonly limits: readonly LimitRule[];
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
}

/** The limit with its defaults: named after its period, in fixed windows. */
export function ruleOf({ limit, period, name = period, algorithm = 'fixed' }: LimitInput): LimitRule {
  return { name, limit, period, algorithm };
}

/** The one limit the seed's plans hold: fixed, named after its period. */
export function isSeedLimit(limits: readonly LimitRule[]): boolean {
  return limits.length === 1 && limits[0]!.algorithm === 'fixed' && limits[0]!.name === limits[0]!.period;
}

export function planOf(limits: readonly LimitRule[]): Plan {
  return { limits, tag: limits.map((l) => `${l.limit}/${l.period}/${l.algorithm}`).join(',') };
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
