import { ALGORITHMS_LUA } from './algorithms.js';

/**
 * The plan switch (plan-switch.ts) in Redis, by the `read` and `charge` of each algorithm's twin (its
 * line in `ALGORITHMS`, algorithms.ts): `l` is a limit's table as the consume script takes it
 * (consume-script.ts, without `known`).
 *
 * `spentIn(l, key, now)`: the units its count spent in the current window (a token bucket: what it
 * lacks of its burst). `raiseTo(l, key, units, now)`: charges the count so that it counts at least
 * `units` (at most its capacity), as raisedTo does.
 */
export const PLAN_SWITCH_LUA = `
${ALGORITHMS_LUA}
local function spentIn(l, key, now)
  local used = ALGORITHMS[l.algorithm].read(l, key, 0, now)
  return used
end
local function raiseTo(l, key, units, now)
  local algorithm = ALGORITHMS[l.algorithm]
  local used, _, state = algorithm.read(l, key, 0, now)
  local short = math.min(units, l.limit) - used
  if short > 0 then algorithm.charge(l, key, state, short, 0, short, now) end
end
`;
