import { capacityOf } from '../../plans/plan.js';
import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import { BUCKET_LUA, bucketPeriodMs, refilled } from '../token-bucket.js';
import { BUCKET_LAPSE_MS, LEASE_MS } from '../lease-book.js';
import { noWindow, type ConsumeLimit, type RedisTwin, type SettleLimit } from './redis-twin.js';

/**
 * The token bucket (token-bucket.ts, docs/decisions/0095) in the consume script: a hash {u units, p
 * parts, a at}, brought up to `now` by `refill` (BUCKET_LUA) and written back when a call changes it; its
 * count is what it lacks of its burst, its reply's second number its parts. `d` counts the units it
 * admitted since the hash was made (what a put-back after a loss deducts, ../recovery/bucket-ledger.ts), `k` on a
 * bucket put back Redis' marker as the replica that put it back read it. `l` is the limit's table of the
 * call ({limit: its burst, rate, periodMs, replica, known: the caller's record {units, parts, at, held,
 * marker}}).
 *
 * Leases (docs/decisions/0208): `u` is the bucket with the units leased and not yet settled still in
 * it, refilled as any bucket up to its burst; `o` of them are leased out, so requests and new leases
 * draw on `u - o` only. Per replica R: `l:R` its units outstanding, `s:R` when the first of them was
 * leased, `y:R` when they lapse (its latest lease's end and BUCKET_LAPSE_MS): a lapsed replica's units
 * count as used. A lease settled (its time, size and unused units, `ended`) takes its used units out of
 * `u` and its size out of `o`; one leased before `s:R` had lapsed already and changes nothing. `e` is the
 * latest lapse of any replica (the hash outlives it), `r` when units were first asked back.
 * A bucket state `b` in a call is {u, p, a, d, o, changed}.
 */
export const TOKEN_BUCKET_LUA = `
${BUCKET_LUA}
local function bucketLost(l, key, _, now)
  local burst, known = l.limit, l.known
  local h = redis.call('HMGET', key, 'u', 'p', 'a', 'k', 'l:' .. (l.replica or ''))
  -- Both brought up to one time: the bucket never holds more than any caller's record refilled.
  local t = math.max(now, known.at, tonumber(h[3] or '0'))
  local su, sp = burst, 0
  if h[1] then su, sp = refill(tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), t, l.rate, burst, l.periodMs) end
  local ru, rp = refill(known.units, known.parts, known.at, t, l.rate, burst, l.periodMs)
  if su >= burst then su, sp = burst, 0 end
  if ru >= burst then ru, rp = burst, 0 end
  -- Put back after a loss the caller has not learned of (../recovery/bucket-ledger.ts): its own record is not
  -- in it yet, and the record of the replica that decided last may not be either. Units leased to the
  -- caller it no longer counts as outstanding were lost with it.
  return su > ru or (su == ru and sp > rp) or (h[4] and h[4] ~= known.marker)
    or tonumber(h[5] or '0') < known.held
end
-- Replicas whose leases lapsed: their units count as used.
local function bucketLapse(key, b, now)
  local fields = redis.call('HGETALL', key)
  local held = {}
  for j = 1, #fields, 2 do
    if string.sub(fields[j], 1, 2) == 'l:' then held[string.sub(fields[j], 3)] = tonumber(fields[j + 1]) end
  end
  for j = 1, #fields, 2 do
    local replica = string.sub(fields[j], 3)
    if string.sub(fields[j], 1, 2) == 'y:' and tonumber(fields[j + 1]) <= now then
      local units = held[replica] or 0
      redis.call('HDEL', key, 'l:' .. replica, 's:' .. replica, fields[j])
      b[1], b[4], b[5], b[6] = b[1] - units, b[4] + units, b[5] - units, true
    end
  end
end
-- The caller's leases it is done with ({time, size, unused, …}).
local function bucketSettleLeases(l, key, b, ended)
  local own, since = 'l:' .. l.replica, 's:' .. l.replica
  local h = redis.call('HMGET', key, own, since)
  if not h[1] or #ended == 0 then return end
  local held, from = tonumber(h[1]), tonumber(h[2] or '0')
  for j = 1, #ended, 3 do
    local size = math.min(ended[j + 1], held)
    if ended[j] >= from and size > 0 then
      local used = size - math.min(ended[j + 2], size)
      held = held - size
      b[1], b[4], b[5], b[6] = b[1] - used, b[4] + used, b[5] - size, true
    end
  end
  if held > 0 then redis.call('HSET', key, own, held)
  else redis.call('HDEL', key, own, since, 'y:' .. l.replica) end
end
-- What it lacks of its burst (its units leased out lacking too), its parts, and the bucket to charge.
local function bucketRead(l, key, _, now, subject)
  local h = redis.call('HMGET', key, 'u', 'p', 'a', 'd', 'o')
  local u, p, a = l.limit, 0, now
  if h[1] then u, p, a = refill(tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), now, l.rate, l.limit, l.periodMs) end
  local b = {math.min(u, l.limit), p, a, tonumber(h[4] or '0'), tonumber(h[5] or '0'), false}
  if b[5] > 0 then bucketLapse(key, b, now) end
  if subject and subject.ended then bucketSettleLeases(l, key, b, subject.ended) end
  return l.limit - (b[1] - b[5]), b[2], b
end
local function bucketCharge(l, key, b, admitted, leased, _, now)
  if admitted == 0 and leased == 0 and not b[6] then return 0 end
  local u, p, a = b[1] - admitted, b[2], b[3]
  b[1], b[4], b[5] = u, b[4] + admitted, b[5] + leased
  local keep = 0
  if leased > 0 then
    local own = 'l:' .. l.replica
    if redis.call('HINCRBY', key, own, leased) == leased then redis.call('HSET', key, 's:' .. l.replica, string.format('%.0f', now)) end
    local lapse = string.format('%.0f', now + ${LEASE_MS + BUCKET_LAPSE_MS})
    redis.call('HSET', key, 'y:' .. l.replica, lapse)
    keep = math.max(tonumber(lapse), tonumber(redis.call('HGET', key, 'e') or '0'))
    redis.call('HSET', key, 'e', string.format('%.0f', keep))
  elseif b[5] > 0 then
    keep = tonumber(redis.call('HGET', key, 'e') or '0')
  end
  -- Kept until it would be full again and every lease lapsed, and its grace (by the callers' clock, as every count).
  local fullAt = math.max(a + math.ceil(((l.limit - u) * l.periodMs - p) / l.rate), keep) + ${EXPIRY_GRACE_MS}
  redis.call('HSET', key, 'u', string.format('%.0f', u), 'p', string.format('%.0f', p), 'a', string.format('%.0f', a), 'd', string.format('%.0f', b[4]), 'o', string.format('%.0f', b[5]))
  if b[5] == 0 then redis.call('HDEL', key, 'r') end
  redis.call('PEXPIREAT', key, string.format('%.0f', fullAt))
  return admitted + leased
end
-- A request did not fit while units are leased out: they are asked back (as settleBook does for a window).
local function bucketReclaim(l, key, _, b, _, _, refused, short, now, channel)
  if not (refused and short and b[5] > 0) then return 0 end
  return askBack(key, now, channel)
end
-- Its second number in the consume script's reply: its parts and its units leased out.
local function bucketReplied(b)
  return {b[2], b[5]}
end
-- A settlement (settle-script.ts): charged like an admission, a refund filling it up to its burst.
local function bucketSettle(l, key, delta, now)
  local _, _, bucket = bucketRead(l, key, nil, now)
  if bucket[1] - delta >= l.limit then bucket[1], bucket[2] = l.limit + delta, 0 end
  return bucketCharge(l, key, bucket, delta, 0, 0, now)
end
-- What a settlement answers of it: the bucket as it left it (strings).
local function bucketLeft(key)
  return redis.call('HMGET', key, 'u', 'p', 'a')
end
ALGORITHMS.tokenBucket = {lost = bucketLost, read = bucketRead, charge = bucketCharge, book = bucketReclaim,
  replied = bucketReplied, settle = bucketSettle, left = bucketLeft}
`;

/** A token bucket: `limit` its burst (capacityOf), refilled by `rate` every `periodMs`; leased under `replica`. */
export interface BucketLimit extends ConsumeLimit {
  readonly algorithm: 'tokenBucket';
  readonly rate: number;
  readonly periodMs: number;
  readonly replica: string;
}

/** The token bucket in Redis: its count, `<base>:bucket:<period>` (limiter-keys.ts), has no window. */
export const tokenBucketTwin: RedisTwin = {
  lua: TOKEN_BUCKET_LUA,
  kind: 'bucket',
  span(rule, nowMs, holder, at): BucketLimit {
    noWindow(at, nowMs);
    return {
      algorithm: 'tokenBucket',
      limit: capacityOf(rule),
      rate: rule.limit,
      periodMs: bucketPeriodMs(rule),
      replica: holder.replica,
    };
  },
  settled: (l): SettleLimit & Omit<BucketLimit, 'replica'> => {
    const { limit, rate, periodMs } = l as BucketLimit;
    return { algorithm: 'tokenBucket', limit, rate, periodMs };
  },
  // It counts its units for ever: they are given back first.
  over: () => false,
  // The bucket brought up to now, less the units leased out of it.
  stored: async (client, count, rule, nowMs) => {
    const [units, parts, at, leased] = await client.hmget(count, 'u', 'p', 'a', 'o');
    if (units === null) return undefined;
    const now = refilled({ units: Number(units), parts: Number(parts), at: Number(at) }, rule, nowMs);
    return { ...now, units: now.units - Number(leased ?? 0) };
  },
};
