import type { RedisClient } from '../../redis/connect.js';
import { defineScript, type ScriptRunner } from '../../redis/script.js';
import type { LimitRule } from '../../plans/plan.js';
import type { BucketKnown } from '../consume-script.js';
import type { BucketLimit } from '../core/token-bucket.lua.js';
import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import { BUCKET_LAPSE_MS, LEASE_MS } from '../lease-book.js';
import { BUCKET_LUA, bucketPeriodMs, refilled, type Bucket } from '../token-bucket.js';
import type { MovedShare } from './key-homes.js';
import type { LossShare } from './loss-detection.js';
import type { RedisMarker } from './redis-marker.js';

/**
 * Puts a token bucket back after Redis lost it (docs/decisions/0125): the caller's record, refilled to
 * the later of now and the bucket's time, less `d` (the units the hash admitted since it was made,
 * after the loss), replaces what Redis holds only when it is lower, both brought up to the same time.
 * A missing bucket is full. The bucket it leaves (lowered or not) carries `k`, Redis' marker as the
 * caller read it: a replica that has not read that marker yet has not put its own record back, and the
 * consume script answers it `lost` rather than let it draw on a level another replica may still lower.
 * ARGV: the record's units, parts and time, now, the refill (limit), burst and period in ms, the
 * marker ('' unknown: no `k`), the caller (its replica) and the units leased to it there it has not
 * settled: those are outstanding again in the bucket (its `l:` field at least that, lapsing as a lease
 * does, core/token-bucket.lua.ts), so the bucket keeps them out of what others draw on.
 * Returns 1 when it changed the bucket.
 */
const RESTORE_BUCKET_LUA = `
${BUCKET_LUA}
local ru, rp, ra, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local rate, burst, periodMs = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local marker, replica, held = ARGV[8], ARGV[9], tonumber(ARGV[10])
if held > 0 then
  local own = 'l:' .. replica
  local was = tonumber(redis.call('HGET', KEYS[1], own) or '0')
  if was < held then
    local lapse = now + ${LEASE_MS + BUCKET_LAPSE_MS}
    local keep = math.max(lapse, tonumber(redis.call('HGET', KEYS[1], 'e') or '0'))
    redis.call('HSET', KEYS[1], own, held, 's:' .. replica, 0, 'y:' .. replica, string.format('%.0f', lapse), 'e', string.format('%.0f', keep))
    redis.call('HINCRBY', KEYS[1], 'o', held - was)
    redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', keep + ${EXPIRY_GRACE_MS}))
  end
end
local h = redis.call('HMGET', KEYS[1], 'u', 'p', 'a', 'd')
local t = math.max(now, ra, tonumber(h[3] or '0'))
local u, p = refill(ru, rp, ra, t, rate, burst, periodMs)
if u >= burst then u, p = burst, 0 end
local d = tonumber(h[4] or '0')
u = u - d
if u < 0 then u, p = 0, 0 end
if h[1] then
  local su, sp = refill(tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), t, rate, burst, periodMs)
  if su >= burst then su, sp = burst, 0 end
  if su < u or (su == u and sp <= p) then
    if marker ~= '' then redis.call('HSET', KEYS[1], 'k', marker) end
    return 0
  end
elseif u >= burst then
  return 0
end
local fullAt = math.max(t + math.ceil(((burst - u) * periodMs - p) / rate), tonumber(redis.call('HGET', KEYS[1], 'e') or '0')) + ${EXPIRY_GRACE_MS}
redis.call('HSET', KEYS[1], 'u', string.format('%.0f', u), 'p', string.format('%.0f', p), 'a', string.format('%.0f', t), 'd', string.format('%.0f', d))
if marker ~= '' then redis.call('HSET', KEYS[1], 'k', marker) end
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', fullAt))
return 1
`;

/** What a replica last learned of a bucket: its state after the replica's last decision there. */
interface BucketRecord {
  readonly rule: LimitRule;
  /** The bucket's terms in the consume script: a record of other terms is not passed. */
  readonly terms: BucketLimit;
  readonly bucket: Bucket;
  /** Units leased to this replica in it it had not settled then. */
  readonly held: number;
}

/**
 * What this replica learned of each token bucket in its last decision there (docs/decisions/0125), kept
 * until the bucket would be full again. The bucket's true level is at most every replica's record
 * refilled since (other replicas' decisions only took from it), and exactly that of the replica that
 * decided last. So the consume script finds a bucket lost when it holds more than the caller's record
 * refilled (a missing bucket is full), and after a loss every replica puts its record back, the lowest
 * winning (RESTORE_BUCKET_LUA): the bucket holds again what the last replica to decide saw, less what it
 * admitted since it came back. Until a replica has read the marker the loss changed (and so put its own
 * record back), the script answers it `lost` on a bucket put back: one that put back first may have
 * brought back a level its stale record allowed, which only the last decider's record lowers.
 */
export class BucketLedger implements LossShare, MovedShare {
  private readonly records = new Map<string, BucketRecord>();
  private readonly restore: ScriptRunner;
  /** A flush was noticed and not every bucket is put back yet. */
  private owed = false;

  constructor(
    client: RedisClient,
    private readonly marker: RedisMarker,
    /** This replica's name in Redis, which its leases of a bucket are kept under. */
    private readonly replica: string,
  ) {
    this.restore = defineScript(client, 'tollgateRestoreBucket', RESTORE_BUCKET_LUA, 1);
  }

  /**
   * A decision left bucket `key` (decided with `terms`, of `rule`) as `bucket` (its leased units in
   * it), `held` of them leased to this replica and not settled (undefined: as before).
   */
  note(key: string, terms: BucketLimit, rule: LimitRule, bucket: Bucket, held?: number): void {
    this.records.set(key, { rule, terms, bucket, held: held ?? this.records.get(key)?.held ?? 0 });
  }

  /**
   * The record of bucket `key` for a call that decides it with `terms` at `nowMs`, as the consume
   * script takes it (`held` the units leased to this replica there it has not settled, the marker this
   * replica last read, '' before the first read); undefined when there is none, it is of other terms,
   * or the bucket would be full again by now and nothing is leased (then forgotten).
   */
  recordOf(key: string, terms: BucketLimit, nowMs: number, held: number): BucketKnown | undefined {
    const record = this.records.get(key);
    if (record === undefined || !sameTerms(record.terms, terms)) return undefined;
    if (held === 0 && this.isFull(record, nowMs)) {
      this.records.delete(key);
      return undefined;
    }
    const { units, parts, at } = record.bucket;
    return { units, parts, at, held, marker: this.marker.current ?? '' };
  }

  /** Bucket `key` is under `to` now: a key's counts moved (key-homes.ts). */
  moved(key: string, to: string): void {
    const record = this.records.get(key);
    if (record === undefined) return;
    this.records.delete(key);
    this.records.set(to, record);
  }

  /** Puts back this replica's record of bucket `key`, which Redis lost: 1 when it lowered the bucket. */
  async putBack(key: string, nowMs: number): Promise<number> {
    const record = this.records.get(key);
    if (record === undefined || (record.held === 0 && this.isFull(record, nowMs))) return 0;
    const { rule, bucket, held } = record;
    return Number(
      await this.restore(
        [key],
        [
          bucket.units,
          bucket.parts,
          bucket.at,
          nowMs,
          rule.limit,
          rule.burst!,
          bucketPeriodMs(rule),
          this.marker.current ?? '',
          this.replica,
          held,
        ],
      ),
    );
  }

  /** Redis lost its data (a restart, a flush): every bucket recorded is to be put back. */
  owe(): void {
    this.owed = true;
  }

  /** Puts every bucket recorded back, when a flush is owed, and forgets those full by now; throws if Redis stops answering (call again). */
  async repay(nowMs: number): Promise<number> {
    for (const [key, record] of this.records)
      if (record.held === 0 && this.isFull(record, nowMs)) this.records.delete(key);
    if (!this.owed) return 0;
    let restored = 0;
    for (const key of this.records.keys()) restored += await this.putBack(key, nowMs);
    this.owed = false;
    return restored;
  }

  private isFull({ rule, bucket }: BucketRecord, nowMs: number): boolean {
    return refilled(bucket, rule, nowMs).units >= rule.burst!;
  }
}

const sameTerms = (a: BucketLimit, b: BucketLimit): boolean =>
  a.limit === b.limit && a.rate === b.rate && a.periodMs === b.periodMs;
