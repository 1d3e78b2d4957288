import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import { BUCKET_LUA } from '../token-bucket.js';

/**
 * The token bucket (token-bucket.ts, docs/decisions/0095) in the consume script: a hash {u units, p
 * parts, a at}, brought up to `now` by `refill` (BUCKET_LUA) and written back only when it admits; its
 * count is what it lacks of its burst, its reply's second number its parts. `d` counts the units it
 * admitted since the hash was made (what a put-back after a loss deducts, ../recovery/bucket-ledger.ts), `k` on a
 * bucket put back Redis' marker as the replica that put it back read it. `l` is the limit's table of the
 * call ({limit: its burst, rate, periodMs, known: the caller's record {units, parts, at, marker}}).
 */
export const TOKEN_BUCKET_LUA = `
${BUCKET_LUA}
local function bucketLost(l, key, _, now)
  local burst, known = l.limit, l.known
  local h = redis.call('HMGET', key, 'u', 'p', 'a', 'k')
  -- Both brought up to one time: the bucket never holds more than any caller's record refilled.
  local t = math.max(now, known.at, tonumber(h[3] or '0'))
  local su, sp = burst, 0
  if h[1] then su, sp = refill(tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), t, l.rate, burst, l.periodMs) end
  local ru, rp = refill(known.units, known.parts, known.at, t, l.rate, burst, l.periodMs)
  if su >= burst then su, sp = burst, 0 end
  if ru >= burst then ru, rp = burst, 0 end
  -- Put back after a loss the caller has not learned of (../recovery/bucket-ledger.ts): its own record is not
  -- in it yet, and the record of the replica that decided last may not be either.
  return su > ru or (su == ru and sp > rp) or (h[4] and h[4] ~= known.marker)
end
-- What it lacks of its burst, its parts, and the bucket to charge.
local function bucketRead(l, key, _, now)
  local h = redis.call('HMGET', key, 'u', 'p', 'a', 'd')
  local u, p, a = l.limit, 0, now
  if h[1] then u, p, a = refill(tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), now, l.rate, l.limit, l.periodMs) end
  u = math.min(u, l.limit)
  return l.limit - u, p, {u, p, a, tonumber(h[4] or '0')}
end
local function bucketCharge(l, key, bucket, admitted)
  if admitted == 0 then return 0 end
  local u, p, a, since = bucket[1] - admitted, bucket[2], bucket[3], bucket[4]
  -- Kept until it would be full again, and its grace (by the callers' clock, as every count).
  local fullAt = a + math.ceil(((l.limit - u) * l.periodMs - p) / l.rate) + ${EXPIRY_GRACE_MS}
  redis.call('HSET', key, 'u', string.format('%.0f', u), 'p', string.format('%.0f', p), 'a', string.format('%.0f', a), 'd', string.format('%.0f', since + admitted))
  redis.call('PEXPIREAT', key, string.format('%.0f', fullAt))
  return admitted
end
-- A settlement (settle-script.ts): charged like an admission, a refund filling it up to its burst.
local function bucketSettle(l, key, delta, now)
  local _, _, bucket = bucketRead(l, key, nil, now)
  if bucket[1] - delta >= l.limit then bucket[1], bucket[2] = l.limit + delta, 0 end
  return bucketCharge(l, key, bucket, delta)
end
`;
