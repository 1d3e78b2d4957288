import { EXPIRY_GRACE_MS } from '../limiter-keys.js';

/**
 * How long requests that do not fit wait, from the first reclaim in a window, for leased places to
 * come back: live holders give them back within a round trip or two, even on a loaded machine; this
 * bounds the wait, once per window, when a holder died.
 */
export const RECLAIM_WAIT_MS = 1_000;

/**
 * A count is sure to be in Redis until this long before it expires: its grace (counts outlive their
 * window by EXPIRY_GRACE_MS) and a second for clocks a little apart.
 */
export const COUNT_SURE_MS = EXPIRY_GRACE_MS + 1_000;

/**
 * What the window algorithms (fixed-window.lua.ts, sliding-window.lua.ts) share in the consume
 * script: whether a window's count lost keys, and its lease book (lease-book.ts). A book is a hash: `p`
 * units leased and not yet settled by their replica, `r` when units were first asked back (ms, 0 while
 * none are outstanding), `k` on a count put back after a loss (../recovery/restore-script.ts), `m` once the key's
 * counts moved (../recovery/key-homes.ts).
 *
 * `windowLost(l, held, book)`: the count holds `held` (as Redis has it) of limit `l`, whose `known` is
 * what the caller holds in it and Redis' marker as it last read it.
 * `settleBook(l, key, book, leased, settled, refused, short, now, channel)`: the book after a call that
 * leased and settled so; returns 1 when the call's refused requests should ask again (units asked back).
 */
export const WINDOW_LEASE_LUA = `
local function windowLost(l, held, book)
  local known = l.known
  local below = false
  if known.places > 0 and held < known.places then
    -- Unless it is about to expire by Redis' clock (a caller's clock can be behind it).
    local time = redis.call('TIME')
    below = tonumber(time[1]) * 1000 < l.expiresAt - ${COUNT_SURE_MS}
  end
  -- Put back after a loss the caller has not learned of (../recovery/restore-script.ts): its own places are
  -- not in it yet, nor perhaps those of every other replica.
  if not below and known.marker ~= '' then
    local stamp = redis.call('HGET', book, 'k')
    below = stamp and stamp ~= known.marker
  end
  return below
end
local function settleBook(l, key, book, leased, settled, refused, short, now, channel)
  if leased == settled and not refused then return 0 end
  local held = 0
  local state = redis.call('HMGET', book, 'p', 'r')
  local outstanding = math.max(0, tonumber(state[1] or '0') + leased - settled)
  local asked = tonumber(state[2] or '0')
  if outstanding == 0 then asked = 0 end
  if refused and short and outstanding > 0 then
    if asked == 0 then asked = now end
    if now < asked + ${RECLAIM_WAIT_MS} then
      held = 1
      redis.call('PUBLISH', channel, key)
    end
  end
  if state[1] or leased > 0 then
    redis.call('HSET', book, 'p', outstanding, 'r', asked)
    redis.call('PEXPIREAT', book, string.format('%.0f', l.expiresAt))
  end
  return held
end
-- A window's book in the scripts' ALGORITHMS table (fixed-window.lua.ts, sliding-window.lua.ts).
local function windowBook(l, key, book, _, leased, settled, refused, short, now, channel)
  return settleBook(l, key, book, leased, settled, refused, short, now, channel)
end
`;
