import type { LimitRule } from '../../plans/plan.js';
import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import { oldestCounted, slidingResetAt, SLOTS, slotAt, slotLeavesAt, slotMs } from '../sliding-window.js';
import type { RedisTwin, SettleLimit, WindowLimit } from './redis-twin.js';
import { slidingWindow, type SlidingWindow } from './sliding-window.js';

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
ALGORITHMS.sliding = {lost = slidingLost, read = slidingRead, charge = slidingCharge, book = windowBook, settle = slidingSettle}
`;

/**
 * The sliding window in Redis: its count, `<base>:sliding:<period>` (limiter-keys.ts), is charged in
 * the slot of `nowMs`, named as a string (the script names a hash field by it), which leaves the window
 * SLOTS slots later.
 */
export const slidingWindowTwin: RedisTwin = {
  lua: SLIDING_WINDOW_LUA,
  kind: 'window',
  span(rule, nowMs, _holder, at): WindowLimit {
    const slot = slotAt(rule.period, nowMs);
    at.start = slot * slotMs(rule.period);
    at.end = at.start + slotMs(rule.period);
    at.reset = slidingResetAt(rule.period, slot);
    return {
      algorithm: 'sliding',
      limit: rule.limit,
      expiresAt: slotLeavesAt(rule.period, slot) + EXPIRY_GRACE_MS,
      slot: String(slot),
    };
  },
  settled: (l): SettleLimit & { readonly slot: string } => ({
    algorithm: 'sliding',
    slot: (l as WindowLimit).slot!,
  }),
  resetOf: (rule, oldest) => slidingResetAt(rule.period, oldest),
  // A slot still counts its units after the span's: they are given back first.
  over: () => false,
  stored: async (client, count, rule, nowMs) => replayed(await client.hgetall(count), rule, nowMs),
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
