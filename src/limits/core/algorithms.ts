import type { Algorithm } from '../../plans/plan.js';
import { concurrency } from './concurrency.js';
import { concurrencyTwin } from './concurrency.lua.js';
import { fixedWindow } from './fixed-window.js';
import { fixedWindowTwin } from './fixed-window.lua.js';
import type { LimitAlgorithm } from './limit-algorithm.js';
import type { RedisTwin } from './redis-twin.js';
import { slidingWindow } from './sliding-window.js';
import { slidingWindowTwin } from './sliding-window.lua.js';
import { tokenBucket } from './token-bucket.js';
import { tokenBucketTwin } from './token-bucket.lua.js';
import { WINDOW_LEASE_LUA } from './window-lease.lua.js';
import { ASK_BACK_LUA } from './ask-back.lua.js';

/** Each algorithm a plan's limit may name, by that name (a new algorithm is a module and a line here). */
export const ALGORITHM_OF: Readonly<Record<Algorithm, LimitAlgorithm<unknown>>> = {
  fixed: fixedWindow as LimitAlgorithm<unknown>,
  sliding: slidingWindow as LimitAlgorithm<unknown>,
  tokenBucket: tokenBucket as LimitAlgorithm<unknown>,
  concurrency: concurrency as LimitAlgorithm<unknown>,
};

/** Each algorithm's Redis twin (its Lua twin's module), by name: the Redis limiter's dispatchers ask it. */
export const TWIN_OF: Readonly<Record<Algorithm, RedisTwin>> = {
  fixed: fixedWindowTwin,
  sliding: slidingWindowTwin,
  tokenBucket: tokenBucketTwin,
  concurrency: concurrencyTwin,
};

/**
 * Every twin's Lua, each registering its functions in `ALGORITHMS` by its name: what the consume,
 * settle and plan-switch scripts dispatch by (a limit's table of a call names its `algorithm`).
 */
export const ALGORITHMS_LUA = `
local ALGORITHMS = {}
${WINDOW_LEASE_LUA}
${ASK_BACK_LUA}
${Object.values(TWIN_OF)
  .map((twin) => twin.lua)
  .join('')}`;
