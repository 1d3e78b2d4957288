import { DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { definePerKeyCount } from '../redis/script.js';
import { BALANCE_LUA } from './core/balance.lua.js';
import { FIXED_WINDOW_LUA } from './core/fixed-window.lua.js';
import { SLIDING_WINDOW_LUA } from './core/sliding-window.lua.js';
import { TOKEN_BUCKET_LUA } from './core/token-bucket.lua.js';
import { WINDOW_LEASE_LUA } from './core/window-lease.lua.js';

/**
 * Settles one request in one atomic step that never refuses (RateLimiter.settle): charges `delta`
 * units (a refund when negative) to each count and balance its reservation was charged to, by the Lua
 * twins of core/ (`fixedSettle`, `slidingSettle`, `bucketSettle`, `balanceSettle`). Concurrency places
 * are not units: none is passed. Once only: the call's mark (its last key, named by the caller for this
 * call) is set with the charge, so a call sent again after a timeout whose first sending did reach
 * Redis charges nothing again.
 *
 * KEYS: the counts, then the balances, then the mark. ARGV[1]: the call as JSON (`SettleCall`). Returns
 * each token bucket as it left it, `units, parts, at` (strings), in KEYS order: the caller's record of
 * it (recovery/bucket-ledger.ts) must not find it lost for holding more after a refund.
 */
const SETTLE_LUA = `
${WINDOW_LEASE_LUA}
${FIXED_WINDOW_LUA}
${SLIDING_WINDOW_LUA}
${TOKEN_BUCKET_LUA}
${BALANCE_LUA}
local call = cjson.decode(ARGV[1])
local delta, now = call.delta, call.now
local first = redis.call('SET', KEYS[#KEYS], '1', 'NX', 'PX', call.markMs)
local buckets = {}
for i, l in ipairs(call.limits) do
  if l.algorithm == 'fixed' then
    if first then fixedSettle(l, KEYS[i], delta) end
  elseif l.algorithm == 'sliding' then
    if first then slidingSettle(l, KEYS[i], delta) end
  else
    if first then bucketSettle(l, KEYS[i], delta, now) end
    local h = redis.call('HMGET', KEYS[i], 'u', 'p', 'a')
    buckets[#buckets + 1] = h[1]
    buckets[#buckets + 1] = h[2]
    buckets[#buckets + 1] = h[3]
  end
end
if first then
  for k, b in ipairs(call.balances) do balanceSettle(KEYS[#call.limits + k], b.epoch, b.window, delta) end
end
return buckets
`;

/** One count a settlement charges: a fixed window's, a sliding limit's (its slot) or a token bucket's. */
export type SettleLimit =
  | { readonly algorithm: 'fixed' }
  | { readonly algorithm: 'sliding'; readonly slot: string }
  | {
      readonly algorithm: 'tokenBucket';
      readonly limit: number;
      readonly rate: number;
      readonly periodMs: number;
    };

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
