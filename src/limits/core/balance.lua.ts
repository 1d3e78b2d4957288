import { SETTLE_BALANCE_LUA } from '../balance-lua.js';

/**
 * A balance (balance.ts) in the consume script: a hash brought up to the record the call passes
 * (settleTerms, balance-lua.ts), then charged. `b` is the balance's table of the call ({terms, seen:
 * the most the caller saw spent of it in its period, {epoch, window, spent}}).
 *
 * `balanceLost(b, key)`: below what the caller saw spent of it in that period, or gone, it lost keys
 * while Redis stayed up; unless marked moved (../recovery/key-homes.ts), which the caller has not heard of yet.
 * `balanceCharge(key, settled, admitted)`: writes the balance settled and charged; returns its epoch,
 * window, and units granted and spent as Redis holds them (strings: a client reads an integer reply near
 * 2^53 through a double).
 */
export const BALANCE_LUA = `
${SETTLE_BALANCE_LUA}
local function balanceLost(b, key)
  local seen = b.seen
  if seen.spent <= 0 then return false end
  local h = redis.call('HMGET', key, 'e', 'w', 's', 'm')
  if h[4] then return false end
  local e, w = tonumber(h[1]), tonumber(h[2])
  return e == nil or (e == seen.epoch and w == seen.window and tonumber(h[3]) < seen.spent)
end
local function balanceCharge(key, settled, admitted)
  local e, w, g, s, b = unpack(settled)
  storeBalance(key, e, w, g, s, b)
  if admitted > 0 then redis.call('HINCRBY', key, 's', admitted) end
  local held = redis.call('HMGET', key, 'g', 's')
  return e, w, held[1], held[2]
end
-- A settlement (settle-script.ts) in the period it was charged in: more spent, or a refund granted back.
local function balanceSettle(key, epoch, window, delta)
  local h = redis.call('HMGET', key, 'e', 'w')
  if tonumber(h[1]) ~= epoch or tonumber(h[2]) ~= window then return end
  if delta > 0 then redis.call('HINCRBY', key, 's', delta) else redis.call('HINCRBY', key, 'g', -delta) end
end
`;
