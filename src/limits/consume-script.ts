import { DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { defineScript } from '../redis/script.js';
import { leaseBookKey } from './limiter-keys.js';
import { MAX_LIMITS } from './plan.js';
import { SLOTS } from './sliding-window.js';

/**
 * How long requests that do not fit wait, from the first reclaim in a window, for leased places to
 * come back: live holders give them back within a round trip or two, even on a loaded machine; this
 * bounds the wait, once per window, when a holder died.
 */
export const RECLAIM_WAIT_MS = 1_000;

/**
 * Check and count in one atomic step, across every limit of a plan, for `want` requests of one key
 * at once plus up to `lease` places handed to the calling replica ahead of its requests. Requests are
 * admitted while every limit holds them, and each admitted request (and leased place) is counted in
 * every limit. A lease is granted only when every request asked for was admitted and every limit holds
 * 1,024 more, and at most a sixteenth of what the tightest holds, so small limits and the last places
 * of a window are decided one call at a time.
 *
 * Per limit i, KEYS[2i-1] is its count and KEYS[2i] its lease book. A fixed limit counts in a string
 * per window (as before plans had several limits). A sliding limit counts in a hash of slots
 * (sliding-window.ts): the window's count is the sum of the slots from `slot - SLOTS` on, older slots
 * are deleted as they are met. The book is a hash: `p` places leased and not yet settled by their
 * replica, `r` when places were first asked back (ms, 0 while none are outstanding). A key seen now
 * and then, far from its limits, never touches its books.
 * ARGV, as `consumeArgs` builds it: want, lease, settled, returned, now, reclaimChannel, then per
 * limit: limit, expiresAt, slot (-1 for a fixed limit; used as given for the field name, since Lua
 * would print a large number in exponent form). Few arguments: a key in rotation pays for
 * every one, per request.
 *
 * When requests do not fit a limit while leased places of it are outstanding, the call says `held`
 * and publishes that limit's count key on the reclaim channel: holders give back what they have not
 * used, settle what they used, and the caller asks again, until nothing is outstanding or
 * RECLAIM_WAIT_MS have passed since the first reclaim. So with limit L, L requests are admitted per
 * window even when a replica sits on leased places.
 * Returns ConsumeReply.
 */
const CONSUME_LUA = `
local want = tonumber(ARGV[1])
local settled = tonumber(ARGV[3])
local returned = tonumber(ARGV[4])
local n = #KEYS / 2
local counts = {}
local oldest = {}
local room = nil
for i = 1, n do
  local key = KEYS[2 * i - 1]
  local slot = tonumber(ARGV[3 * i + 6])
  local count = 0
  local first = 0
  if slot < 0 then
    count = tonumber(redis.call('GET', key) or '0')
    if returned > 0 and count > 0 then count = redis.call('DECRBY', key, math.min(returned, count)) end
  else
    if returned > 0 then
      local mine = tonumber(redis.call('HGET', key, ARGV[3 * i + 6]) or '0')
      if mine > 0 then redis.call('HINCRBY', key, ARGV[3 * i + 6], -math.min(returned, mine)) end
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
  local free = tonumber(ARGV[3 * i + 4]) - count
  if room == nil or free < room then room = free end
end
local admitted = math.max(0, math.min(want, room))
local leased = 0
if admitted == want and room - want >= 1024 then leased = math.min(tonumber(ARGV[2]), math.floor((room - want) / 16)) end
local taken = admitted + leased
local held = 0
local reply = {admitted, leased, 0}
for i = 1, n do
  local key = KEYS[2 * i - 1]
  local limit = tonumber(ARGV[3 * i + 4])
  local expiresAt = ARGV[3 * i + 5]
  local slot = tonumber(ARGV[3 * i + 6])
  local before = counts[i]
  if taken > 0 then
    if slot < 0 then
      if redis.call('INCRBY', key, taken) == taken then redis.call('PEXPIREAT', key, expiresAt) end
    else
      redis.call('HINCRBY', key, ARGV[3 * i + 6], taken)
      redis.call('PEXPIREAT', key, expiresAt)
    end
  end
  if leased ~= settled or admitted < want then
    local bookKey = KEYS[2 * i]
    local book = redis.call('HMGET', bookKey, 'p', 'r')
    local outstanding = math.max(0, tonumber(book[1] or '0') + leased - settled)
    local asked = tonumber(book[2] or '0')
    if outstanding == 0 then asked = 0 end
    if admitted < want and limit - before < want and outstanding > 0 then
      local now = tonumber(ARGV[5])
      if asked == 0 then asked = now end
      if now < asked + ${RECLAIM_WAIT_MS} then
        held = 1
        redis.call('PUBLISH', ARGV[6], key)
      end
    end
    if book[1] or leased > 0 then
      redis.call('HSET', bookKey, 'p', outstanding, 'r', asked)
      redis.call('PEXPIREAT', bookKey, expiresAt)
    end
  end
  reply[2 * i + 2] = before + taken
  reply[2 * i + 3] = oldest[i]
end
reply[3] = held
return reply
`;

/** One limit of a call. */
export interface ConsumeLimit {
  readonly limit: number;
  /** When its count and lease book expire, epoch ms. */
  readonly expiresAt: number;
  /** The sliding slot the call counts in (sliding-window.ts), or -1 for a fixed window. */
  readonly slot: number;
}

export interface ConsumeCall {
  /** Requests to decide. */
  readonly want: number;
  /** Places asked for ahead of requests. */
  readonly lease: number;
  /** Places of leases the caller is done with, used or not. */
  readonly settled: number;
  /** Of those, the ones it did not use. */
  readonly returned: number;
  /** Epoch ms, on the clock every replica shares (NTP): reclaim waits are timed by it. */
  readonly now: number;
  /** Where to ask holders for leased places back. */
  readonly reclaimChannel: string;
  readonly limits: readonly ConsumeLimit[];
}

/**
 * The script's reply as it comes, unparsed (one call per request for keys in rotation): how many of
 * the `want` requests are in, the first ones; the caller's lease (the last `leased` places of every
 * limit's count); 1 when the rest did not fit while leased places are being asked back (ask again
 * shortly); then per limit i, at 3 + 2i and 4 + 2i, its count after this call and, for a sliding
 * limit, the oldest slot that still holds places (0 for a fixed limit).
 */
export type ConsumeReply = readonly [admitted: number, leased: number, held: 0 | 1, ...countsAndOldest: number[]];

/** Limit i's count after the call. */
export function countOf(reply: ConsumeReply, i: number): number {
  return reply[3 + 2 * i]!;
}

/** Limit i's oldest slot holding places (sliding limits). */
export function oldestSlotOf(reply: ConsumeReply, i: number): number {
  return reply[4 + 2 * i]!;
}

/** The shifts of a plan with one limit. */
export const NO_SHIFTS: readonly number[] = [0];

/**
 * Each limit's count less the first's: the places the call took are the last ones of every count,
 * so the first limit's place p is place p + shift of limit i.
 */
export function shiftsOf(reply: ConsumeReply): readonly number[] {
  const n = (reply.length - 3) / 2;
  if (n === 1) return NO_SHIFTS;
  const first = countOf(reply, 0);
  return Array.from({ length: n }, (_, i) => countOf(reply, i) - first);
}

/** The script's KEYS: each limit's count, then its lease book. */
export function consumeKeys(counts: readonly string[]): string[] {
  return counts.flatMap((count) => [count, leaseBookKey(count)]);
}

/** The script's ARGV, by position. */
export function consumeArgs(call: ConsumeCall): (string | number)[] {
  const args: (string | number)[] = [call.want, call.lease, call.settled, call.returned, call.now, call.reclaimChannel];
  for (const l of call.limits) args.push(l.limit, l.expiresAt, l.slot);
  return args;
}

export type ConsumeScript = (keys: readonly string[], call: ConsumeCall) => Promise<ConsumeReply>;

/**
 * Defines the script on `client` (at start-up: see defineScript), once per number of limits: a
 * command's number of keys is fixed, so that a Cluster routes it by its first key.
 */
export function defineConsumeScript(client: RedisClient): ConsumeScript {
  const runners = DIRECT_SCRIPTS.consume.slice(0, MAX_LIMITS).map((name, i) => defineScript(client, name, CONSUME_LUA, 2 * (i + 1)));
  return (keys, call) => runners[call.limits.length - 1]!(keys, consumeArgs(call)) as Promise<ConsumeReply>;
}
