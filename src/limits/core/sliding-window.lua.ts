import { SLOTS } from '../sliding-window.js';

/**
 * The sliding window (sliding-window.ts) in the consume script: a hash of slots, slot → units; the
 * window's count is the sum of the slots from `slot - SLOTS` on, older slots deleted as they are met.
 * `l` is the limit's table of the call ({limit, expiresAt, slot (a string: the field's name), known}).
 */
export const SLIDING_WINDOW_LUA = `
local function slidingLost(l, key, book)
  return windowLost(l, tonumber(redis.call('HGET', key, l.slot) or '0'), book)
end
-- Its count and the oldest slot holding units (its reset), after the units the caller gives back.
local function slidingRead(l, key, back)
  local slot = tonumber(l.slot)
  if back > 0 then
    local mine = tonumber(redis.call('HGET', key, l.slot) or '0')
    if mine > 0 then redis.call('HINCRBY', key, l.slot, -math.min(back, mine)) end
  end
  local count, first = 0, slot
  local fields = redis.call('HGETALL', key)
  for j = 1, #fields, 2 do
    local s = tonumber(fields[j])
    if s < slot - ${SLOTS} then
      redis.call('HDEL', key, fields[j])
    else
      local c = tonumber(fields[j + 1])
      count = count + c
      if c > 0 and s < first then first = s end
    end
  end
  return count, first
end
-- A settlement (settle-script.ts): the slot it was charged in, while the hash keeps it, never below 0.
local function slidingSettle(l, key, delta)
  local count = tonumber(redis.call('HGET', key, l.slot) or '-1')
  if count >= 0 then redis.call('HINCRBY', key, l.slot, math.max(delta, -count)) end
end
local function slidingCharge(l, key, _, admitted, leased)
  local taken = admitted + leased
  if taken > 0 then
    redis.call('HINCRBY', key, l.slot, taken)
    redis.call('PEXPIREAT', key, string.format('%.0f', l.expiresAt))
  end
  return taken
end
`;
