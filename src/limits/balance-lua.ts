/**
 * A balance in Redis (docs/guides/credits.md): one hash per balance, `<base>:credits` beside its subject's counts,
 * with `e` (epoch), `w` (refill window start), `g` (units granted), `s` (units spent) and `b` (what `s`
 * was last restarted from). The Lua below is shared by every script that touches balances, so there is
 * one definition of how a balance is brought up to date: it is `settle` of src/plans/balance.ts, step
 * for step, over the record the caller passes in ARGV.
 *
 * Numbers go to Redis as Lua numbers (never through string concatenation, which prints large numbers
 * in exponent form): Redis writes integers up to 2^53 exactly. They come back as the strings Redis
 * holds, never as integer replies, which ioredis parses through a double (off by one near 2^53).
 */

import type { RedisClient } from '../redis/connect.js';
import { defineScript } from '../redis/script.js';

/** The record a call passes for one balance. */
export interface BalanceTerms {
  readonly epoch: number;
  readonly window: number;
  readonly granted: number;
  readonly floor: number;
  /** The refill window of the call's instant (0 without a refill). */
  readonly windowNow: number;
  /** The refill amount, or -1 without a refill. */
  readonly refillAmount: number;
}

/**
 * The most a replica saw spent of a balance, in the latest period it saw: a call passes it, and a
 * balance found below it was lost (recovery/balance-ledger.ts puts it back).
 */
export interface BalanceSeen {
  readonly epoch: number;
  readonly window: number;
  readonly spent: number;
}

export function balanceArgs(t: BalanceTerms): number[] {
  return [t.epoch, t.window, t.granted, t.floor, t.windowNow, t.refillAmount];
}

/**
 * `settleTerms(key, t)`: the balance at `key` brought up to the record `t` ({epoch, window, granted,
 * floor, windowNow, refillAmount}: BalanceTerms); `settleBalance(key, at)` the same with the record at
 * ARGV[at…at+5]. Both return e, w, g, s, b (not written: the caller writes it with `storeBalance`).
 */
export const SETTLE_BALANCE_LUA = `
local function settleTerms(key, t)
  local ea, wa, ga, fa, wnow, amount = t.epoch, t.window, t.granted, t.floor, t.windowNow, t.refillAmount
  local h = redis.call('HMGET', key, 'e', 'w', 'g', 's', 'b')
  local e, w, g, s, b = tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), tonumber(h[4]), tonumber(h[5])
  if e == nil or ea > e or (ea == e and wa > w) then
    e, w, g, s, b = ea, wa, ga, fa, fa
  elseif ea == e and wa == w and ga > g then
    g = ga
  end
  if amount >= 0 and wnow > w then
    w, g, s, b = wnow, amount, 0, 0
  end
  return e, w, g, s, b
end
local function settleBalance(key, at)
  local n = {}
  for i = 0, 5 do n[i + 1] = tonumber(ARGV[at + i]) end
  return settleTerms(key, {epoch = n[1], window = n[2], granted = n[3], floor = n[4], windowNow = n[5], refillAmount = n[6]})
end
local function storeBalance(key, e, w, g, s, b)
  redis.call('HSET', key, 'e', e, 'w', w, 'g', g, 's', s, 'b', b)
end
`;

const SYNC_BALANCE_LUA = `
${SETTLE_BALANCE_LUA}
storeBalance(KEYS[1], settleBalance(KEYS[1], 1))
return 1
`;

/** Brings the balance at `key` up to `terms` now (a top-up or a set just committed), charging nothing. */
export type SyncBalanceScript = (key: string, terms: BalanceTerms) => Promise<unknown>;

export function defineSyncBalanceScript(client: RedisClient): SyncBalanceScript {
  const run = defineScript(client, 'tollgateSyncBalance', SYNC_BALANCE_LUA, 1);
  return (key, terms) => run([key], balanceArgs(terms));
}
