import { DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { defineScript } from '../redis/script.js';
import { balanceArgs, BALANCE_ARGS, SETTLE_BALANCE_LUA, type BalanceTerms } from './balance-lua.js';
import type { BalanceSeen } from './balance-ledger.js';
import { EXPIRY_GRACE_MS, leaseBookKey } from './limiter-keys.js';
import { SLOTS } from './sliding-window.js';
import { BUCKET_LUA, bucketPeriodMs } from './token-bucket.js';
import type { LimitRule } from '../plans/plan.js';
import type { ConsumeReply } from './consume-reply.js';

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

/** Arguments per balance of a call: its record, then what the caller saw spent of it. */
const CALL_BALANCE_ARGS = BALANCE_ARGS + 3;

/**
 * Check and charge in one atomic step, across every limit and balance of every subject of a decision (a
 * key's and its consumer's), for a batch of one replica's requests plus, per subject, units leased to it
 * ahead of its requests. Requests are decided in arrival order, each admitted when every limit still
 * has room for its cost, and every balance holds it, after the ones admitted before it (as if they had
 * come one by one), and the units admitted are charged to every limit and balance. A subject's lease (the same number of units in each of its limits) is granted
 * only when no request was refused and each of its limits holds 1,024 more, and is at most a sixteenth
 * of what its tightest limit holds, so small limits and the last units of a window are decided one call
 * at a time.
 *
 * Per limit i, KEYS[2i-1] is its count and KEYS[2i] its lease book, subject after subject. A fixed limit
 * counts in a string per window. A sliding limit counts in a hash of slots (sliding-window.ts): the
 * window's count is the sum of the slots from `slot - SLOTS` on, older slots are deleted as they are
 * met. The book is a hash: `p` units leased and not yet settled by their replica, `r` when units were
 * first asked back (ms, 0 while none are outstanding), and `k`, on a count put back after a loss, Redis'
 * marker as the replica that put it back read it (restore-script.ts). A key seen now and then, far from
 * its limits, never writes its books. After the limits' keys, KEYS holds one hash per balance (balance-lua.ts), in
 * the subjects' order; a balance is brought up to the record the call passes, then charged.
 * ARGV, as `consumeArgs` builds it: now, reclaimChannel, the number of subjects; per subject: its number
 * of limits, lease, settled, returned, 1 when it holds a balance (else 0); per limit: limit, expiresAt,
 * slot (-1 for a fixed limit; used as given for the field name, since Lua would print a large number in
 * exponent form), what the caller knows of the count (`known`: the places it holds in a window's count or
 * slot and Redis' marker as it last read it, `places:marker`; its record of a token bucket and Redis' marker as it last read it, `units:parts:at:marker`; for
 * a concurrency limit `held:sureUntil:marker`, its places in it, until when it is sure to be there and
 * Redis' marker as it last read it; 0 for nothing); per balance, its record (balance-lua.ts) and the most the caller saw spent of it (epoch,
 * window, spent); then the requests as runs of one cost: requests, cost, requests, cost, … Few
 * arguments: a key in rotation pays for every one, per request.
 *
 * A token bucket (token-bucket.ts, docs/decisions/0095) is a hash {u units, p parts, a at}, brought up
 * to `now` by BUCKET_LUA and written back only when it admits; its count is what it lacks of its
 * burst (its `limit` argument) and its reply's second number its parts; `d` counts the units it admitted
 * since the hash was made (what a put-back after a loss deducts, bucket-ledger.ts), and `k`, on a bucket
 * put back, Redis' marker as the replica that put it back read it. A concurrency limit
 * (docs/decisions/0096) is a hash of places per replica, `p:<replica>`, each replica's expiring at
 * `x:<replica>` unless renewed (concurrency-places.ts); expired ones are dropped as they are met; it
 * counts places, one per admitted request, and holds `k` as a token bucket does once put back. Neither has a lease book, nor is ever leased.
 *
 * A count below the places the caller holds in it, a concurrency limit holding fewer of the caller's
 * places than it holds, a token bucket holding more than the caller's record of it refilled since (or
 * gone while that record is not full), a window's count, token bucket or concurrency limit put back
 * under a marker the caller has not read, or a balance below what the caller saw spent of it in its period (or gone), means Redis lost keys while it
 * stayed up (a flush, an eviction, a deletion): the call decides and charges nothing and answers `lost`
 * with the limits and balances found so (loss-detection.ts puts them back).
 *
 * When a request does not fit a limit while leased units of it are outstanding, the call says `held`
 * and publishes that limit's count key on the reclaim channel: holders give back what they have not
 * used, settle what they used, and the caller asks again, until nothing is outstanding or
 * RECLAIM_WAIT_MS have passed since the first reclaim. So with limit L, L units are admitted per
 * window even when a replica sits on leased units.
 * Returns ConsumeReply.
 */
const CONSUME_LUA = `
${SETTLE_BALANCE_LUA}
${BUCKET_LUA}
local now = tonumber(ARGV[1])
local subjects = tonumber(ARGV[3])
local lease, settled, returned, subjectOf = {}, {}, {}, {}
local n, nb = 0, 0
for s = 1, subjects do
  local at = 5 * s - 1
  lease[s] = tonumber(ARGV[at + 1])
  settled[s] = tonumber(ARGV[at + 2])
  returned[s] = tonumber(ARGV[at + 3])
  if ARGV[at + 4] == '1' then nb = nb + 1 end
  for _ = 1, tonumber(ARGV[at]) do
    n = n + 1
    subjectOf[n] = s
  end
end
-- Limit i's arguments start at ARGV[args + 4i]; the balances' after the last limit's; the runs after those.
local args = 5 * subjects
local bargs = args + 4 * n + 4
-- A count below what the caller itself holds in it, a concurrency limit holding fewer of its places
-- than it holds (or letting them lapse), a token bucket above what the caller's record of it refilled
-- allows, a count or bucket put back under a marker the caller has not read, or a balance below what it
-- saw spent of it (or gone), lost keys while Redis stayed up: nothing is decided or charged, the reply
-- names them.
local lost = {}
for i = 1, n do
  local known = ARGV[args + 4 * i + 3]
  if known ~= '0' then
    local key = KEYS[2 * i - 1]
    local field = ARGV[args + 4 * i + 2]
    local kind = string.sub(field, 1, 1)
    local below = false
    if kind == 'b' then
      local rate, periodMs = string.match(field, '^b(%d+):(%d+)$')
      rate, periodMs = tonumber(rate), tonumber(periodMs)
      local burst = tonumber(ARGV[args + 4 * i])
      local ru, rp, ra, marker = string.match(known, '^(%d+):(%d+):(%d+):(.*)$')
      ru, rp, ra = tonumber(ru), tonumber(rp), tonumber(ra)
      local h = redis.call('HMGET', key, 'u', 'p', 'a', 'k')
      -- Both brought up to one time: the bucket never holds more than any caller's record refilled.
      local t = math.max(now, ra, tonumber(h[3] or '0'))
      local su, sp = burst, 0
      if h[1] then su, sp = refill(tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), t, rate, burst, periodMs) end
      ru, rp = refill(ru, rp, ra, t, rate, burst, periodMs)
      if su >= burst then su, sp = burst, 0 end
      if ru >= burst then ru, rp = burst, 0 end
      -- Put back after a loss the caller has not learned of (bucket-ledger.ts): its own record is not
      -- in it yet, and the record of the replica that decided last may not be either.
      below = su > ru or (su == ru and sp > rp) or (h[4] and h[4] ~= marker)
    elseif kind == 'c' then
      -- The places the caller holds, lapsed or fewer; or the count gone while it is sure to be there.
      local replica = string.match(field, '^c%d+:(.+)$')
      local held, sure, marker = string.match(known, '^(%d+):(%d+):(.*)$')
      held, sure = tonumber(held), tonumber(sure)
      local h = redis.call('HMGET', key, 'p:' .. replica, 'x:' .. replica, 'e', 'k')
      below = (held > 0 and (tonumber(h[1] or '0') < held or tonumber(h[2] or '0') < now)) or (not h[3] and now < sure)
      -- Put back after a loss the caller has not learned of (concurrency-places.ts): the places of a
      -- replica that has not put back yet are not in it, and would be taken again.
      if not below and marker ~= '' and h[4] then below = h[4] ~= marker end
    else
      local places, marker = string.match(known, '^(%d+):?(.*)$')
      places = tonumber(places)
      if places > 0 then
        local held = tonumber(field) < 0 and redis.call('GET', key) or redis.call('HGET', key, field)
        -- Unless it is about to expire by Redis' clock (a caller's clock can be behind it).
        if tonumber(held or '0') < places then
          local time = redis.call('TIME')
          local expiresAt = tonumber(ARGV[args + 4 * i + 1])
          below = tonumber(time[1]) * 1000 < expiresAt - ${COUNT_SURE_MS}
        end
      end
      -- Put back after a loss the caller has not learned of (restore-script.ts): its own places are
      -- not in it yet, nor perhaps those of every other replica.
      if not below and marker ~= '' then
        local stamp = redis.call('HGET', KEYS[2 * i], 'k')
        below = stamp and stamp ~= marker
      end
    end
    -- Below it and marked moved (key-homes.ts): the caller has not heard of the move yet, no loss.
    if below and not redis.call('HGET', KEYS[2 * i], 'm') then lost[#lost + 1] = i end
  end
end
for k = 1, nb do
  local at = bargs + ${CALL_BALANCE_ARGS} * (k - 1) + ${BALANCE_ARGS}
  local seen = tonumber(ARGV[at + 2])
  if seen > 0 then
    local h = redis.call('HMGET', KEYS[2 * n + k], 'e', 'w', 's', 'm')
    local e, w = tonumber(h[1]), tonumber(h[2])
    if h[4] then
      -- Moved away (key-homes.ts): the caller has not heard of the move yet, no loss.
    elseif e == nil or (e == tonumber(ARGV[at]) and w == tonumber(ARGV[at + 1]) and tonumber(h[3]) < seen) then
      lost[#lost + 1] = n + k
    end
  end
end
if #lost > 0 then return {2, unpack(lost)} end
local counts = {}
local oldest = {}
local buckets = {}
local room = math.huge
local placeRoom = math.huge
for i = 1, n do
  local key = KEYS[2 * i - 1]
  local field = ARGV[args + 4 * i + 2]
  local kind = string.sub(field, 1, 1)
  local back = returned[subjectOf[i]]
  local count = 0
  local first = 0
  if kind == 'b' then
    local limit, periodMs = string.match(field, '^b(%d+):(%d+)$')
    limit, periodMs = tonumber(limit), tonumber(periodMs)
    local burst = tonumber(ARGV[args + 4 * i])
    local h = redis.call('HMGET', key, 'u', 'p', 'a', 'd')
    local u, p, a = burst, 0, now
    if h[1] then u, p, a = refill(tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), now, limit, burst, periodMs) end
    u = math.min(u, burst)
    buckets[i] = {u, p, a, limit, periodMs, tonumber(h[4] or '0')}
    count = burst - u
    first = p
  elseif kind == 'c' then
    -- Places in flight, per replica: 'p:<replica>' places, 'x:<replica>' when they expire unless
    -- the replica's heartbeat renews them (a replica that died gives its places back so).
    local fields = redis.call('HGETALL', key)
    local places, expiry = {}, {}
    for j = 1, #fields, 2 do
      local name = fields[j]
      local tag = string.sub(name, 1, 2)
      if tag == 'p:' then places[string.sub(name, 3)] = tonumber(fields[j + 1])
      elseif tag == 'x:' then expiry[string.sub(name, 3)] = tonumber(fields[j + 1]) end
    end
    for replica, held in pairs(places) do
      if tonumber(expiry[replica] or '0') < now then
        redis.call('HDEL', key, 'p:' .. replica, 'x:' .. replica)
      else
        count = count + held
      end
    end
  elseif tonumber(field) < 0 then
    count = tonumber(redis.call('GET', key) or '0')
    if back > 0 and count > 0 then count = redis.call('DECRBY', key, math.min(back, count)) end
  else
    local slot = tonumber(field)
    if back > 0 then
      local mine = tonumber(redis.call('HGET', key, field) or '0')
      if mine > 0 then redis.call('HINCRBY', key, field, -math.min(back, mine)) end
    end
    first = slot
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
  end
  counts[i] = count
  oldest[i] = first
  local free = tonumber(ARGV[args + 4 * i]) - count
  if kind == 'c' then
    if free < placeRoom then placeRoom = free end
  elseif free < room then room = free end
end
local balances = {}
for k = 1, nb do
  local e, w, g, s, b = settleBalance(KEYS[2 * n + k], bargs + ${CALL_BALANCE_ARGS} * (k - 1))
  balances[k] = {e, w, g, s, b}
  if g - s < room then room = g - s end
end
local want = 0
local admitted = 0
-- Requests admitted: a concurrency limit counts places, one a request whatever its cost.
local requestsIn = 0
local fits = {}
for r = bargs + ${CALL_BALANCE_ARGS} * nb, #ARGV, 2 do
  local requests = tonumber(ARGV[r])
  local cost = tonumber(ARGV[r + 1])
  local fit = math.max(0, math.min(requests, math.floor((room - admitted) / cost), placeRoom - requestsIn))
  want = want + requests * cost
  admitted = admitted + fit * cost
  requestsIn = requestsIn + fit
  fits[#fits + 1] = fit
end
local refused = admitted < want
local leased = {}
local spare = {}
for s = 1, subjects do leased[s] = 0 end
if not refused then
  for i = 1, n do
    local s = subjectOf[i]
    local free = tonumber(ARGV[args + 4 * i]) - counts[i] - admitted
    if spare[s] == nil or free < spare[s] then spare[s] = free end
  end
  for s = 1, subjects do
    if spare[s] ~= nil and spare[s] >= 1024 then leased[s] = math.min(lease[s], math.floor(spare[s] / 16)) end
  end
end
local held = 0
local reply = {0}
for i = 1, n do
  local key = KEYS[2 * i - 1]
  local limit = tonumber(ARGV[args + 4 * i])
  local expiresAt = ARGV[args + 4 * i + 1]
  local field = ARGV[args + 4 * i + 2]
  local s = subjectOf[i]
  local before = counts[i]
  local taken = admitted + leased[s]
  local kind = string.sub(field, 1, 1)
  if kind == 'b' then
    local u, p, a, rate, periodMs, since = unpack(buckets[i])
    if admitted > 0 then
      u = u - admitted
      -- d: units admitted since the hash was made, which a put-back after a loss deducts (bucket-ledger.ts).
      -- Kept until it would be full again, and its grace (by the callers' clock, as every count).
      local fullAt = a + math.ceil(((limit - u) * periodMs - p) / rate) + ${EXPIRY_GRACE_MS}
      redis.call('HSET', key, 'u', string.format('%.0f', u), 'p', string.format('%.0f', p), 'a', string.format('%.0f', a), 'd', string.format('%.0f', since + admitted))
      redis.call('PEXPIREAT', key, string.format('%.0f', fullAt))
    end
    taken = admitted
  elseif kind == 'c' then
    taken = requestsIn
    if taken > 0 then
      local leaseMs, replica = string.match(field, '^c(%d+):(.+)$')
      local deadline = now + tonumber(leaseMs)
      local latest = math.max(deadline, tonumber(redis.call('HGET', key, 'e') or '0'))
      redis.call('HINCRBY', key, 'p:' .. replica, taken)
      redis.call('HSET', key, 'x:' .. replica, string.format('%.0f', deadline), 'e', string.format('%.0f', latest))
      redis.call('PEXPIREAT', key, string.format('%.0f', latest + ${EXPIRY_GRACE_MS}))
    end
  elseif taken > 0 then
    if tonumber(field) < 0 then
      if redis.call('INCRBY', key, taken) == taken then redis.call('PEXPIREAT', key, expiresAt) end
    else
      redis.call('HINCRBY', key, field, taken)
      redis.call('PEXPIREAT', key, expiresAt)
    end
  end
  if (kind ~= 'b' and kind ~= 'c') and (leased[s] ~= settled[s] or refused) then
    local bookKey = KEYS[2 * i]
    local book = redis.call('HMGET', bookKey, 'p', 'r')
    local outstanding = math.max(0, tonumber(book[1] or '0') + leased[s] - settled[s])
    local asked = tonumber(book[2] or '0')
    if outstanding == 0 then asked = 0 end
    if refused and limit - before < want and outstanding > 0 then
      if asked == 0 then asked = now end
      if now < asked + ${RECLAIM_WAIT_MS} then
        held = 1
        redis.call('PUBLISH', ARGV[2], key)
      end
    end
    if book[1] or leased[s] > 0 then
      redis.call('HSET', bookKey, 'p', outstanding, 'r', asked)
      redis.call('PEXPIREAT', bookKey, expiresAt)
    end
  end
  reply[2 * i] = before + taken
  reply[2 * i + 1] = oldest[i]
end
reply[1] = held
for s = 1, subjects do reply[2 * n + 1 + s] = leased[s] end
for k = 1, nb do
  local key = KEYS[2 * n + k]
  local e, w, g, s, b = balances[k][1], balances[k][2], balances[k][3], balances[k][4], balances[k][5]
  storeBalance(key, e, w, g, s, b)
  if admitted > 0 then redis.call('HINCRBY', key, 's', admitted) end
  -- As Redis holds them (strings): a client reads an integer reply near 2^53 through a double.
  local held = redis.call('HMGET', key, 'g', 's')
  local at = 2 * n + 1 + subjects + 4 * (k - 1)
  reply[at + 1] = e
  reply[at + 2] = w
  reply[at + 3] = held[1]
  reply[at + 4] = held[2]
end
for r = 1, #fits do reply[2 * n + 1 + subjects + 4 * nb + r] = fits[r] end
return reply
`;

/** One limit of a call. */
export interface ConsumeLimit {
  /** Its capacity: a token bucket's burst (capacityOf). */
  readonly limit: number;
  /** When its count and lease book expire, epoch ms (unused by token buckets and concurrency limits). */
  readonly expiresAt: number;
  /**
   * The sliding slot the call counts in (sliding-window.ts), or -1 for a fixed window; for a token
   * bucket `b<limit>:<periodMs>`, for a concurrency limit `c<leaseMs>:<replica>` (limitField).
   */
  readonly slot: number | string;
}

/** The slot argument of a token bucket or a concurrency limit held by `replica` for `leaseMs` (ConsumeLimit.slot). */
export function limitField(rule: LimitRule, replica: string, leaseMs: number): string | undefined {
  if (rule.algorithm === 'tokenBucket') return `b${rule.limit}:${bucketPeriodMs(rule)}`;
  if (rule.algorithm === 'concurrency') return `c${leaseMs}:${replica}`;
  return undefined;
}

/** Whether a limit of a call counts in windows (fixed or sliding): those alone are leased and kept in the ledger. */
export const inWindows = (l: ConsumeLimit): l is ConsumeLimit & { readonly slot: number } =>
  typeof l.slot === 'number';

/** A balance of a call: its record, and the most the caller saw spent of it (undefined: nothing yet). */
export interface CallBalance {
  readonly terms: BalanceTerms;
  readonly seen: BalanceSeen | undefined;
}

/** What a call asks and settles for one subject's lease book (lease-book.ts' LeaseCall). */
export interface LeaseTerms {
  /** Units asked for ahead of requests, in each of the subject's limits. */
  readonly lease: number;
  /** Units of leases the caller is done with, used or not. */
  readonly settled: number;
  /** Of those, the ones it did not use. */
  readonly returned: number;
}

export interface ConsumeCall {
  /** Epoch ms, on the clock every replica shares (NTP): reclaim waits are timed by it. */
  readonly now: number;
  /** Where to ask holders for leased units back. */
  readonly reclaimChannel: string;
  /** Per subject, in KEYS order: its lease terms, its limits and its balance (undefined: none). */
  readonly leases: readonly LeaseTerms[];
  readonly limits: readonly (readonly ConsumeLimit[])[];
  /**
   * Per limit (every subject's, in KEYS order), what the caller knows of its count: the places it holds
   * in a window's count or slot and Redis' marker (`places:marker`, WindowLedger.knownOf), its record of a token bucket and Redis' marker as this replica last read
   * it (`units:parts:at:marker`, BucketLedger.recordOf),
   * its places in a concurrency limit, until when that is sure to be there and Redis' marker
   * (`held:sureUntil:marker`, ConcurrencyPlaces.knownOf), 0 for nothing.
   */
  readonly known: readonly (number | string)[];
  readonly balances: readonly (CallBalance | undefined)[];
  /** The requests to decide, in arrival order, as runs of one cost: requests, cost, requests, cost, … */
  readonly runs: readonly number[];
}

/** The script's KEYS: each limit's count, then its lease book; then each balance's hash. */
export function consumeKeys(counts: readonly string[], balances: readonly string[] = []): string[] {
  return [...counts.flatMap((count) => [count, leaseBookKey(count)]), ...balances];
}

/** The script's ARGV, by position. */
export function consumeArgs(call: ConsumeCall): (string | number)[] {
  const args: (string | number)[] = [call.now, call.reclaimChannel, call.leases.length];
  for (let s = 0; s < call.leases.length; s++) {
    const terms = call.leases[s]!;
    args.push(
      call.limits[s]!.length,
      terms.lease,
      terms.settled,
      terms.returned,
      call.balances[s] === undefined ? 0 : 1,
    );
  }
  let i = 0;
  for (const limits of call.limits)
    for (const l of limits) args.push(l.limit, l.expiresAt, l.slot, call.known[i++] ?? 0);
  for (const balance of call.balances)
    if (balance !== undefined) {
      const seen = balance.seen;
      args.push(...balanceArgs(balance.terms), seen?.epoch ?? 0, seen?.window ?? 0, seen?.spent ?? 0);
    }
  for (const x of call.runs) args.push(x);
  return args;
}

export type ConsumeScript = (keys: readonly string[], call: ConsumeCall) => Promise<ConsumeReply>;

/**
 * Defines the script on `client` (at start-up: see defineScript), once per number of keys in a call
 * (DIRECT_SCRIPTS.consume): a command's number of keys is fixed, so that a Cluster routes it by its
 * first key.
 */
export function defineConsumeScript(client: RedisClient): ConsumeScript {
  const runners = DIRECT_SCRIPTS.consume.map((name, i) => defineScript(client, name, CONSUME_LUA, i + 1));
  return (keys, call) => runners[keys.length - 1]!(keys, consumeArgs(call)) as Promise<ConsumeReply>;
}
