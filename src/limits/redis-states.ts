import type { LimitRule } from '../plans/plan.js';
import type { Scope } from '../plans/subject.js';
import type { RedisClient } from '../redis/connect.js';
import { ALGORITHM_OF, TWIN_OF } from './core/algorithms.js';
import { standing } from './core/combine.js';
import { verdictOf } from './core/limit-algorithm.js';
import type { LimitState } from './rate-limiter.js';

/**
 * A limit's state as its count in Redis (at `count`) holds it at `nowMs`, worked out by the core
 * (core/), as the in-process limiter works out its own: the count is read as the core's state of its
 * algorithm by the algorithm's twin (`stored`, core/*.lua.ts), and `verdictOf` says what it holds.
 * What `peek` answers.
 */
export async function storedState(
  client: RedisClient,
  count: string,
  scope: Scope,
  rule: LimitRule,
  nowMs: number,
): Promise<LimitState> {
  const algorithm = ALGORITHM_OF[rule.algorithm];
  const stored = await TWIN_OF[rule.algorithm].stored(client, count, rule, nowMs);
  const state = algorithm.at(stored, rule, nowMs);
  return standing(verdictOf(algorithm, scope, rule, state, 1, nowMs));
}
