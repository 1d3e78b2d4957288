import { windowAt } from '../../plans/window.js';
import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import { fixedWindow } from './fixed-window.js';
import type { RedisTwin, SettleLimit, WindowLimit } from './redis-twin.js';

/**
 * The fixed window (fixed-window.ts) in the consume script: a string per window, counting the units
 * admitted and leased in it, expiring with its window. `l` is the limit's table of the call
 * ({limit, expiresAt, known}); functions as the dispatcher calls them (consume-script.ts).
 */
export const FIXED_WINDOW_LUA = `
local function fixedLost(l, key, book)
  return windowLost(l, tonumber(redis.call('GET', key) or '0'), book)
end
-- Its count, after the units the caller gives back (returned leases).
local function fixedRead(l, key, back)
  local count = tonumber(redis.call('GET', key) or '0')
  if back > 0 and count > 0 then count = redis.call('DECRBY', key, math.min(back, count)) end
  return count, 0
end
-- A settlement (settle-script.ts): the window's count, when it is still there, never below 0.
local function fixedSettle(l, key, delta)
  local count = tonumber(redis.call('GET', key) or '-1')
  if count >= 0 then redis.call('INCRBY', key, math.max(delta, -count)) end
end
local function fixedCharge(l, key, _, admitted, leased)
  local taken = admitted + leased
  if taken > 0 and redis.call('INCRBY', key, taken) == taken then
    redis.call('PEXPIREAT', key, string.format('%.0f', l.expiresAt))
  end
  return taken
end
ALGORITHMS.fixed = {lost = fixedLost, read = fixedRead, charge = fixedCharge, book = windowBook, settle = fixedSettle}
`;

const SETTLED: SettleLimit = { algorithm: 'fixed' };

/** The fixed window in Redis: its count, `<base>:<period>:<window start>` (limiter-keys.ts), lasts its window. */
export const fixedWindowTwin: RedisTwin = {
  lua: FIXED_WINDOW_LUA,
  kind: 'window',
  span(rule, nowMs, _holder, at): WindowLimit {
    const { start, end } = windowAt(rule.period, nowMs);
    at.start = start;
    at.end = end;
    at.reset = end;
    return { algorithm: 'fixed', limit: rule.limit, expiresAt: end + EXPIRY_GRACE_MS };
  },
  settled: () => SETTLED,
  // Once its window is over, its units no longer matter.
  over: (resetMs, nowMs) => resetMs <= nowMs,
  stored: async (client, count, rule, nowMs) =>
    fixedWindow.charged(fixedWindow.at(undefined, rule, nowMs), rule, Number((await client.get(count)) ?? 0)),
};
