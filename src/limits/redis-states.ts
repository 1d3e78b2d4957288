import type { Algorithm, LimitRule } from '../plans/plan.js';
import type { Scope } from '../plans/subject.js';
import type { RedisClient } from '../redis/connect.js';
import { ALGORITHM_OF } from './core/algorithms.js';
import { standing } from './core/combine.js';
import { fixedWindow } from './core/fixed-window.js';
import { verdictOf } from './core/limit-algorithm.js';
import { slidingWindow, type SlidingWindow } from './core/sliding-window.js';
import { placesIn } from './concurrency-places.js';
import type { LimitState } from './rate-limiter.js';
import { oldestCounted, slotAt, slotMs } from './sliding-window.js';
import { refilled } from './token-bucket.js';

/**
 * A limit's state as its count in Redis (at `count`) holds it at `nowMs`, worked out by the core
 * (core/), as the in-process limiter works out its own: the count is read, made the core's state of
 * its algorithm, and `verdictOf` says what it holds. What `peek` answers.
 */
export async function storedState(
  client: RedisClient,
  count: string,
  scope: Scope,
  rule: LimitRule,
  nowMs: number,
): Promise<LimitState> {
  const algorithm = ALGORITHM_OF[rule.algorithm];
  const state = algorithm.at(await STORED[rule.algorithm](client, count, rule, nowMs), rule, nowMs);
  return standing(verdictOf(algorithm, scope, rule, state, 1, nowMs));
}

/**
 * How each algorithm's count at `count` reads as its core state (undefined: nothing counted), by the
 * algorithm's name: a new algorithm does not compile without its line.
 */
const STORED: Readonly<
  Record<Algorithm, (client: RedisClient, count: string, rule: LimitRule, nowMs: number) => Promise<unknown>>
> = {
  fixed: async (client, count, rule, nowMs) =>
    fixedWindow.charged(fixedWindow.at(undefined, rule, nowMs), rule, Number((await client.get(count)) ?? 0)),
  sliding: async (client, count, rule, nowMs) => replayed(await client.hgetall(count), rule, nowMs),
  // The bucket brought up to now, less the units leased out of it (core/token-bucket.lua.ts).
  tokenBucket: async (client, count, rule, nowMs) => {
    const [units, parts, at, leased] = await client.hmget(count, 'u', 'p', 'a', 'o');
    if (units === null) return undefined;
    const now = refilled({ units: Number(units), parts: Number(parts), at: Number(at) }, rule, nowMs);
    return { ...now, units: now.units - Number(leased ?? 0) };
  },
  concurrency: async (client, count, _rule, nowMs) => placesIn(await client.hgetall(count), nowMs),
};

/**
 * A sliding limit's slots as stored (slot → places) charged into its core state slot by slot, the
 * oldest first; those still counted at `nowMs` only, and a slot ahead of `nowMs` (a replica's clock a
 * little ahead) as the current one.
 */
function replayed(
  stored: Readonly<Record<string, string>>,
  rule: LimitRule,
  nowMs: number,
): SlidingWindow | undefined {
  const oldest = oldestCounted(slotAt(rule.period, nowMs));
  const slots = Object.entries(stored)
    .map(([slot, places]) => [Number(slot), Number(places)] as const)
    .filter(([slot, places]) => slot >= oldest && places > 0)
    .sort(([a], [b]) => a - b);
  let state: SlidingWindow | undefined;
  for (const [slot, places] of slots)
    state = slidingWindow.charged(
      slidingWindow.at(state, rule, Math.min(slot * slotMs(rule.period), nowMs)),
      rule,
      places,
    );
  return state;
}
