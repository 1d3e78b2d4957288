import type { RedisClient } from '../../redis/connect.js';
import { defineScript, type ScriptRunner } from '../../redis/script.js';
import type { Scope } from '../../plans/subject.js';
import { SETTLE_BALANCE_LUA, type BalanceSeen } from '../balance-lua.js';
import type { SpentBalance } from '../rate-limiter.js';
import type { MovedShare } from './key-homes.js';
import type { LossShare } from './loss-detection.js';

/**
 * Puts back what Redis lost of each balance (a restart empty, a flush, an eviction, a deletion) (the rule for windows in docs/guides/operations.md, Faults,
 * applied to balances: only a replica that died meanwhile can make a balance admit more than it held).
 *
 * Every reply of the consume script tells the replica how much of a balance is spent in its period.
 * Each replica keeps the most it saw, per balance: the most any live replica saw is what the balance
 * had spent when Redis lost it, less only what replicas that died meanwhile spent after their last
 * look. After a restart, each replica raises the balance's `spent` by what it saw beyond the hash's
 * `base` (where the count restarted: the database's last record, or a put-back before), and raises
 * `base` to it. Raising by the excess over `base` keeps what was spent since the restart, and makes the
 * put-backs of all replicas, in any order and any number of times, add up to the most any of them saw.
 *
 * It also tells the database what was spent (`spent`): the record a count that is lost resumes from
 * when no replica is left that saw it.
 */
const RESTORE_BALANCE_LUA = `
${SETTLE_BALANCE_LUA}
local h = redis.call('HMGET', KEYS[1], 'e', 'w', 'b')
local e, w, b = tonumber(h[1]), tonumber(h[2]), tonumber(h[3])
local ea, wa, ga, seen = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if e == nil then
  storeBalance(KEYS[1], ea, wa, ga, seen, seen)
  return 1
end
if e == ea and w == wa and seen > b then
  redis.call('HINCRBY', KEYS[1], 's', seen - b)
  redis.call('HSET', KEYS[1], 'b', seen)
  return 1
end
return 0
`;

interface Seen {
  readonly scope: Scope;
  readonly id: string;
  readonly key: string;
  epoch: number;
  window: number;
  granted: number;
  spent: number;
}

export class BalanceLedger implements LossShare, MovedShare {
  /** By balance hash key: the latest period seen of it, and the most spent in it. */
  private readonly seen = new Map<string, Seen>();
  /** Balances charged since the last `spent()`. */
  private readonly charged = new Set<Seen>();
  private readonly restore: ScriptRunner;
  /** A restart was noticed and not every balance is put back yet. */
  private owed = false;

  constructor(client: RedisClient) {
    this.restore = defineScript(client, 'tollgateRestoreBalance', RESTORE_BALANCE_LUA, 1);
  }

  /** A reply said balance `key` of (`scope`, `id`) has `spent` of `granted` units spent in (`epoch`, `window`). */
  note(
    scope: Scope,
    id: string,
    key: string,
    epoch: number,
    window: number,
    granted: number,
    spent: number,
  ): void {
    let entry = this.seen.get(key);
    if (entry === undefined) {
      entry = { scope, id, key, epoch, window, granted, spent };
      this.seen.set(key, entry);
    } else if (epoch > entry.epoch || (epoch === entry.epoch && window > entry.window)) {
      Object.assign(entry, { epoch, window, granted, spent });
    } else if (epoch === entry.epoch && window === entry.window) {
      entry.granted = Math.max(entry.granted, granted);
      entry.spent = Math.max(entry.spent, spent);
    } else {
      return;
    }
    this.charged.add(entry);
  }

  /** What was seen spent of each balance charged since the last call. */
  spent(): SpentBalance[] {
    const spent = [...this.charged].map(({ scope, id, epoch, window, spent }) => ({
      scope,
      id,
      epoch,
      window,
      spent,
    }));
    this.charged.clear();
    return spent;
  }

  /** The most seen spent of balance `key` (undefined: not seen). */
  seenOf(key: string): BalanceSeen | undefined {
    return this.seen.get(key);
  }

  /** Balance `key` moved to another name (key-homes.ts): what was seen of it is no longer there. */
  moved(key: string): void {
    this.seen.delete(key);
  }

  /** Puts back what was seen spent of balance `key`, which Redis lost (alone): 1 when it changed it. */
  async putBack(key: string): Promise<number> {
    const entry = this.seen.get(key);
    if (entry === undefined) return 0;
    return Number(await this.restore([key], [entry.epoch, entry.window, entry.granted, entry.spent]));
  }

  /** Redis lost its data (a restart, a flush): every balance seen is to be put back. */
  owe(): void {
    this.owed = true;
  }

  /** Puts every balance seen back, when a restart is owed; throws if Redis stops answering (call again). */
  async repay(): Promise<number> {
    if (!this.owed) return 0;
    let restored = 0;
    for (const key of this.seen.keys()) restored += await this.putBack(key);
    this.owed = false;
    return restored;
  }
}
