import { DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { defineScript } from '../redis/script.js';
import { leaseBookKey } from './limiter-keys.js';

/**
 * How long requests that do not fit wait, from the first reclaim in a window, for leased places to
 * come back: live holders give them back within a round trip or two, even on a loaded machine; this
 * bounds the wait, once per window, when a holder died.
 */
export const RECLAIM_WAIT_MS = 1_000;

/**
 * Check and count in one atomic step, for `want` requests of one key at once plus up to `lease`
 * places handed to the calling replica ahead of its requests. Requests are admitted while the window
 * holds them and only those are counted; a lease is granted only when every request asked for was
 * admitted and the window holds 1,024 more, and at most a sixteenth of those, so small limits and the
 * last places of a window are decided one call at a time.
 *
 * KEYS[1]: the window's count (places taken: admitted requests and leased places), a string, as
 * before leases existed. KEYS[2]: its lease book, a hash: `p` places leased and not yet settled by
 * their replica, `r` when places were first asked back (ms, 0 while none are outstanding). A key seen
 * now and then, far from its limit, never touches the book.
 * ARGV, as `consumeArgs` builds it: limit, expiresAt, want, lease, settled, returned, now,
 * reclaimChannel. Few arguments: a key in rotation pays for every one, per request.
 *
 * When requests do not fit while leased places are outstanding, the call says `held` and publishes
 * KEYS[1] on the reclaim channel: holders give back what they have not used, settle what they used,
 * and the caller asks again, until nothing is outstanding or RECLAIM_WAIT_MS have passed since the
 * first reclaim. So with limit L, L requests are admitted per window even when a replica sits on
 * leased places, whether its lease is still running or ended.
 * Returns ConsumeReply.
 */
const CONSUME_LUA = `
local limit = tonumber(ARGV[1])
local want = tonumber(ARGV[3])
local settled = tonumber(ARGV[5])
local returned = tonumber(ARGV[6])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if returned > 0 and count > 0 then count = redis.call('DECRBY', KEYS[1], math.min(returned, count)) end
local admitted = math.max(0, math.min(want, limit - count))
local leased = 0
if admitted == want and limit - count - want >= 1024 then leased = math.min(tonumber(ARGV[4]), math.floor((limit - count - want) / 16)) end
local taken = admitted + leased
if taken > 0 then
  count = redis.call('INCRBY', KEYS[1], taken)
  if count == taken then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
end
local held = 0
if leased ~= settled or admitted < want then
  local book = redis.call('HMGET', KEYS[2], 'p', 'r')
  local outstanding = math.max(0, tonumber(book[1] or '0') + leased - settled)
  local asked = tonumber(book[2] or '0')
  if outstanding == 0 then asked = 0 end
  if admitted < want and outstanding > 0 then
    local now = tonumber(ARGV[7])
    if asked == 0 then asked = now end
    if now < asked + ${RECLAIM_WAIT_MS} then
      held = 1
      redis.call('PUBLISH', ARGV[8], KEYS[1])
    end
  end
  if book[1] or leased > 0 then
    redis.call('HSET', KEYS[2], 'p', outstanding, 'r', asked)
    if not book[1] then redis.call('PEXPIREAT', KEYS[2], ARGV[2]) end
  end
end
return {count, admitted, leased, held}
`;

export interface ConsumeCall {
  readonly limit: number;
  /** When the count and its lease book expire, epoch ms. */
  readonly expiresAt: number;
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
}

/**
 * The script's reply as it comes, unparsed (one call per request for keys in rotation): the count
 * after this call; how many of the `want` requests are in, the first ones; the caller's lease,
 * places `count - leased + 1` … `count`; 1 when the rest did not fit while leased places are being
 * asked back (ask again shortly).
 */
export type ConsumeReply = readonly [count: number, admitted: number, leased: number, held: 0 | 1];

/** The script's KEYS for one window's count. */
export function consumeKeys(counter: string): readonly [string, string] {
  return [counter, leaseBookKey(counter)];
}

/** The script's ARGV, by position. */
export function consumeArgs(call: ConsumeCall): (string | number)[] {
  return [call.limit, call.expiresAt, call.want, call.lease, call.settled, call.returned, call.now, call.reclaimChannel];
}

export type ConsumeScript = (keys: readonly [string, string], call: ConsumeCall) => Promise<ConsumeReply>;

/** Defines the script on `client` (at start-up: see defineScript). */
export function defineConsumeScript(client: RedisClient): ConsumeScript {
  const run = defineScript(client, DIRECT_SCRIPTS.consume, CONSUME_LUA, 2);
  return (keys, call) => run(keys, consumeArgs(call)) as Promise<ConsumeReply>;
}
