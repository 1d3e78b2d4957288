import { DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { definePerKeyCount } from '../redis/script.js';
import { ALGORITHMS_LUA } from './core/algorithms.js';
import { BALANCE_LUA } from './core/balance.lua.js';
import type { SettleLimit } from './core/redis-twin.js';

/**
 * Settles one request in one atomic step that never refuses (RateLimiter.settle): charges `delta`
 * units (a refund when negative) to each count and balance its reservation was charged to, by the Lua
 * twins of core/ (each algorithm's `settle` in `ALGORITHMS`: core/algorithms.ts; `balanceSettle`).
 * Concurrency places are not units: none is passed. Once only: the call's mark (its last key, named by the caller for this
 * call) is set with the charge, so a call sent again after a timeout whose first sending did reach
 * Redis charges nothing again.
 *
 * KEYS: the counts, then the balances, then the mark. ARGV[1]: the call as JSON (`SettleCall`). Returns
 * what each count whose algorithm has a `left` answers of it, in KEYS order: a token bucket as it left
 * it, `units, parts, at` (strings), for the caller's record of it (recovery/bucket-ledger.ts) must not
 * find it lost for holding more after a refund.
 */
const SETTLE_LUA = `
${ALGORITHMS_LUA}
${BALANCE_LUA}
local call = cjson.decode(ARGV[1])
local delta, now = call.delta, call.now
local first = redis.call('SET', KEYS[#KEYS], '1', 'NX', 'PX', call.markMs)
local left = {}
for i, l in ipairs(call.limits) do
  local algorithm = ALGORITHMS[l.algorithm]
  if first then algorithm.settle(l, KEYS[i], delta, now) end
  if algorithm.left then
    local h = algorithm.left(KEYS[i])
    for j = 1, #h do left[#left + 1] = h[j] end
  end
end
if first then
  for k, b in ipairs(call.balances) do balanceSettle(KEYS[#call.limits + k], b.epoch, b.window, delta) end
end
return left
`;

/** A balance a settlement charges, in the period (epoch and window) the reservation was charged in. */
export interface SettleBalance {
  readonly epoch: number;
  readonly window: number;
}

export interface SettleCall {
  readonly delta: number;
  /** How long the call's mark lasts, ms: longer than the caller may send it again. */
  readonly markMs: number;
  /** Epoch ms: a token bucket is brought up to it. */
  readonly now: number;
  /** In KEYS order, then the balances'. */
  readonly limits: readonly SettleLimit[];
  readonly balances: readonly SettleBalance[];
}

export type SettleScript = (keys: readonly string[], call: SettleCall) => Promise<string[]>;

/** Defines the script on `client` (at start-up: see defineScript), once per number of keys in a call. */
export function defineSettleScript(client: RedisClient): SettleScript {
  const run = definePerKeyCount(client, DIRECT_SCRIPTS.settle, SETTLE_LUA);
  return (keys, call) => run(keys, [JSON.stringify(call)]) as Promise<string[]>;
}
