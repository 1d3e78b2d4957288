import { FIXED_WINDOW_LUA } from './fixed-window.lua.js';
import { SLIDING_WINDOW_LUA } from './sliding-window.lua.js';
import { TOKEN_BUCKET_LUA } from './token-bucket.lua.js';

/**
 * The plan switch (plan-switch.ts) in Redis, by the `read` and `charge` of each algorithm's twin: `l` is
 * a limit's table as the consume script takes it (consume-script.ts, without `known`).
 *
 * `spentIn(l, key, now)`: the units its count spent in the current window (a token bucket: what it
 * lacks of its burst). `raiseTo(l, key, units, now)`: charges the count so that it counts at least
 * `units` (at most its capacity), as raisedTo does.
 */
export const PLAN_SWITCH_LUA = `
${FIXED_WINDOW_LUA}
${SLIDING_WINDOW_LUA}
${TOKEN_BUCKET_LUA}
local READ = {fixed = fixedRead, sliding = slidingRead, tokenBucket = bucketRead}
local CHARGE = {fixed = fixedCharge, sliding = slidingCharge, tokenBucket = bucketCharge}
local function spentIn(l, key, now)
  local used = READ[l.algorithm](l, key, 0, now)
  return used
end
local function raiseTo(l, key, units, now)
  local used, _, state = READ[l.algorithm](l, key, 0, now)
  local short = math.min(units, l.limit) - used
  if short > 0 then CHARGE[l.algorithm](l, key, state, short, 0, short, now) end
end
`;
