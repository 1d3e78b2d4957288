import type { LimitRule } from '../../plans/plan.js';
import type { Subject } from '../../plans/subject.js';
import { windowAt } from '../../plans/window.js';
import type { RedisClient } from '../../redis/connect.js';
import { defineKeyListScript, type ScriptRunner } from '../../redis/script.js';
import {
  balanceKey,
  countsBase,
  EXPIRY_GRACE_MS,
  keyHomeKey,
  leaseBookKey,
  limitCountKey,
} from '../limiter-keys.js';
import { inWindows } from '../consume-script.js';
import { TWIN_OF } from '../core/algorithms.js';
import { NO_HOLDER, UNREAD } from '../core/redis-twin.js';

/**
 * A key's own counts and balance follow it between consumers (docs/decisions/0060).
 *
 * They live under its consumer's hash tag (limiter-keys.ts), so that one script call charges a key
 * and its consumer in one Cluster slot: a key that moves to another consumer, or leaves one, finds
 * them under new names. Redis keeps, in the key's own slot, the home of a key under a consumer: the
 * hash tag its counts are under (`<prefix>{<keyId>}:home`; none: the key's own id). A replica that
 * first decides for a key under a hash tag other than the one it last counted it under sets the home,
 * and moves the counts of the key's current windows and its balance from the previous home and from
 * where it last counted them itself (which carries what replicas slow to hear of the move counted
 * there meanwhile): taken from the old names and deleted in one step (one slot), then added to the
 * new names in another. The key's first decision under the new names waits for that. Moving again
 * changes nothing: what a move took is gone.
 */
/**
 * KEYS, in pairs: a count and its lease book, or a balance twice. Takes each count or balance and
 * deletes it, and (when there was one) marks it moved (`m` in the book, or in the balance's hash) until its window ends
 * (ARGV[i], epoch ms; 0: a balance, which does not end): a replica slow to hear of the move finds it
 * below what it holds there, which is no loss (loss-detection.ts). Returns what it took, and per count
 * the marker its book was stamped with when it was put back after a loss ('' none, restore-script.ts).
 */
const TAKE_LUA = `
local taken, stamps = {}, {}
for i = 1, #KEYS, 2 do
  local key, marker = KEYS[i], KEYS[i + 1]
  stamps[#stamps + 1] = (key ~= marker and redis.call('HGET', marker, 'k')) or ''
  local kind = redis.call('TYPE', key).ok
  if kind == 'string' then
    taken[#taken + 1] = {'s', redis.call('GET', key)}
  elseif kind == 'hash' then
    taken[#taken + 1] = {'h', unpack(redis.call('HGETALL', key))}
  else
    taken[#taken + 1] = {'-'}
  end
  if kind ~= 'none' then
    redis.call('DEL', key)
    redis.call('HSET', marker, 'm', 1)
    local expiresAt = ARGV[(i + 1) / 2]
    if expiresAt ~= '0' then redis.call('PEXPIREAT', marker, expiresAt) end
  end
end
return {taken, stamps}
`;

/**
 * KEYS as TAKE_LUA's, under the new names; ARGV[i] is what was taken of pair i (JSON: a count's value,
 * a sliding count's slots, or a balance's fields), ARGV[pairs + i] when it expires (epoch ms; 0: a
 * balance), ARGV[2 × pairs + i] the marker its book was stamped with ('' none), which the new book
 * keeps. Clears a mark of an earlier move away.
 */
const ADD_LUA = `
-- A balance is what was spent before its count (re)started, b, plus what it admitted since, s - b. Two
-- counts of one period (the one moved, and one a decision started here from the database's record
-- before the move landed; or the one here and what a replica slow to hear of the move spent there)
-- admitted apart: together they hold both, over the earlier start. An older period is dropped.
local function addBalance(key, t)
  local h = redis.call('HMGET', key, 'e', 'w', 's', 'b', 'g')
  local e, w, s, b = tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  local te, tw, ts, tb = tonumber(t.e), tonumber(t.w), tonumber(t.s), tonumber(t.b)
  if e == nil or te > e or (te == e and tw > w) then
    redis.call('HSET', key, 'e', t.e, 'w', t.w, 'g', t.g, 's', t.s, 'b', t.b)
  elseif te == e and tw == w then
    local base = math.min(b, tb)
    redis.call('HSET', key, 'g', math.max(tonumber(h[5]), tonumber(t.g)))
    redis.call('HINCRBY', key, 's', ts - tb + base - b)
    redis.call('HSET', key, 'b', base)
  end
end
local n = #KEYS / 2
for p = 1, n do
  local key, marker = KEYS[2 * p - 1], KEYS[2 * p]
  local taken = cjson.decode(ARGV[p])
  local expiresAt = ARGV[n + p]
  if taken[1] == 's' then
    redis.call('INCRBY', key, taken[2])
    redis.call('PEXPIREAT', key, expiresAt)
  elseif taken[1] == 'h' and expiresAt ~= '0' then
    -- Counts add up; a bucket put back keeps the marker it was put back under (k, bucket-ledger.ts).
    for j = 2, #taken, 2 do
      if taken[j] == 'k' then redis.call('HSET', key, taken[j], taken[j + 1])
      else redis.call('HINCRBY', key, taken[j], taken[j + 1]) end
    end
    redis.call('PEXPIREAT', key, expiresAt)
  elseif taken[1] == 'h' then
    local fields = {}
    for j = 2, #taken, 2 do fields[taken[j]] = taken[j + 1] end
    if fields.e then addBalance(key, fields) end
  end
  local stamp = ARGV[2 * n + p]
  if stamp ~= '' then
    redis.call('HSET', marker, 'k', stamp)
    redis.call('PEXPIREAT', marker, expiresAt)
  end
  redis.call('HDEL', marker, 'm')
end
return 1
`;

/** One of a key's counts (or its balance) under its old and its new hash tag. */
export interface MovedCount {
  readonly from: string;
  readonly to: string;
  /** When the count under its new name expires, epoch ms; 0 for a balance (which does not). */
  readonly expiresAt: number;
}

/** What this replica keeps of a count or a balance, which follows it to its new name. */
export interface MovedShare {
  /** What this replica keeps of `from` is of `to` now. */
  moved(from: string, to: string): void;
}

export class KeyHomes {
  /** By key id: the hash tag this replica last counted the key's own counts under. */
  private readonly seen = new Map<string, string>();
  private readonly take: ScriptRunner;
  private readonly add: ScriptRunner;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    /** Told of every move made, once made: what this replica keeps under the old names is under the new. */
    private readonly shares: readonly MovedShare[],
  ) {
    this.take = defineKeyListScript(client, TAKE_LUA);
    this.add = defineKeyListScript(client, ADD_LUA);
  }

  /**
   * Resolves once key `key`'s own counts of `nowMs` (its current windows, and its balance) are under
   * `hashTag`, moved there when they were elsewhere; undefined when they are there already. Rejects
   * when Redis does not answer (the next decision tries again).
   */
  bringHome(key: Subject, hashTag: string, nowMs: number): Promise<void> | undefined {
    if (this.isHome(key.id, hashTag)) return undefined;
    return this.moveTo(key.id, hashTag, (from) => movedCounts(this.prefix, key, from, hashTag, nowMs));
  }

  /**
   * Whether key `keyId`'s own counts are under `hashTag` already. A key first seen here without a
   * consumer is taken to be at home: only a key under a consumer writes its home, so the common case
   * costs no command.
   */
  private isHome(keyId: string, hashTag: string): boolean {
    const seen = this.seen.get(keyId);
    if (seen === undefined && hashTag === keyId) this.seen.set(keyId, keyId);
    return (seen ?? keyId) === hashTag;
  }

  /**
   * Makes `hashTag` the home of key `keyId`'s counts, moving them from its previous home and from where
   * this replica last counted them: `counts` names each count (and the balance) under a hash tag and
   * under `hashTag`.
   */
  private async moveTo(
    keyId: string,
    hashTag: string,
    counts: (from: string) => MovedCount[],
  ): Promise<void> {
    const home = keyHomeKey(this.prefix, keyId);
    // No home: the key's own id, the names of a key without a consumer.
    const previous =
      (hashTag === keyId ? await this.client.getdel(home) : await this.client.set(home, hashTag, 'GET')) ??
      keyId;
    for (const from of new Set([previous, this.seen.get(keyId) ?? previous]))
      if (from !== hashTag) await this.move(counts(from));
    this.seen.set(keyId, hashTag);
  }

  private async move(counts: readonly MovedCount[]): Promise<void> {
    const [taken, stamps] = (await this.take(
      counts.flatMap((c) => [c.from, markerOf(c, c.from)]),
      counts.map((c) => c.expiresAt),
    )) as [string[][], string[]];
    if (taken.some((t) => t[0] !== '-'))
      await this.add(
        counts.flatMap((c) => [c.to, markerOf(c, c.to)]),
        [...taken.map((t) => JSON.stringify(t)), ...counts.map((c) => c.expiresAt), ...stamps],
      );
    for (const { from, to } of counts) for (const share of this.shares) share.moved(from, to);
  }
}

/** Where a move marks a count or balance moved away: a count's lease book, a balance's own hash. */
const markerOf = (count: MovedCount, name: string): string =>
  count.expiresAt === 0 ? name : leaseBookKey(name);

/**
 * Until when a count moved at `nowMs` must last: its window's expiry, its slot's, as its algorithm's
 * twin gives it (core/*.lua.ts); a count without a window (a token bucket's, a concurrency limit's) a
 * day and its grace (their next decision sets their own expiry).
 */
const DAY_MS = 86_400_000;

function movedUntil(rule: LimitRule, nowMs: number): number {
  const l = TWIN_OF[rule.algorithm].span(rule, nowMs, NO_HOLDER, UNREAD);
  return inWindows(l) ? l.expiresAt : nowMs + DAY_MS + EXPIRY_GRACE_MS;
}

/**
 * Key `key`'s counts in the windows of `nowMs`, and its balance, under hash tag `from` and under `to`.
 * A balance is moved whether or not the key holds one now: one left behind would be found stale should
 * the key come back.
 */
function movedCounts(prefix: string, key: Subject, from: string, to: string, nowMs: number): MovedCount[] {
  const [base, toBase] = [from, to].map((tag) => countsBase(prefix, key, tag)) as [string, string];
  const moved = key.plan.limits.map((rule): MovedCount => {
    const start = windowAt(rule.period, nowMs).start;
    return {
      from: limitCountKey(base, rule, start),
      to: limitCountKey(toBase, rule, start),
      expiresAt: movedUntil(rule, nowMs),
    };
  });
  moved.push({ from: balanceKey(base), to: balanceKey(toBase), expiresAt: 0 });
  return moved;
}
