import { RECLAIM_WAIT_MS } from './window-lease.lua.js';

/**
 * Asking other replicas for what they hold of a count back, in the consume script (lease-reclaim.ts):
 * a token bucket's leased units (token-bucket.lua.ts), a concurrency limit's idle places
 * (concurrency.lua.ts). `askBack(key, now, channel)` publishes `key` on the reclaim channel and returns
 * 1 (the caller's refused requests ask again) until RECLAIM_WAIT_MS after the first ask, which `r` in
 * the count's hash keeps; then 0, a holder that died being waited for once.
 */
export const ASK_BACK_LUA = `
local function askBack(key, now, channel)
  local asked = tonumber(redis.call('HGET', key, 'r') or '0')
  if asked == 0 then
    asked = now
    redis.call('HSET', key, 'r', string.format('%.0f', now))
  end
  if now >= asked + ${RECLAIM_WAIT_MS} then return 0 end
  redis.call('PUBLISH', channel, key)
  return 1
end
`;
