import { randomUUID } from 'node:crypto';
import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, type RedisClient } from '../redis/connect.js';
import { defineKeyListScript, type ScriptRunner } from '../redis/script.js';
import type { PlaceTerms } from './consume-script.js';
import { canPool, type Group } from './limiter-groups.js';
import { EXPIRY_GRACE_MS } from './limiter-keys.js';
import type { LimitWatches } from './limit-watches.js';

/** A place's default lease: a replica that dies holding places gives them back this long after its last heartbeat. */
export const DEFAULT_CONCURRENCY_LEASE_MS = 30_000;

/** How far apart replicas' and Redis' clocks may be (NTP). */
export const CLOCKS_APART_MS = 1_000;

/** A pool asked for its idle places back (or closed) is leased none for this long. */
const POOL_PAUSE_MS = 1_000;
/** Pools give back what they do not need this often. */
const TRIM_MS = 1_000;
/** The fewest places a lease asks for, and a busy pool keeps idle. */
const MIN_PLACE_LEASE = 2;

/**
 * Gives back ARGV[2] places of this replica (ARGV[1]) in each concurrency count of KEYS (never below
 * 0: places that lapsed were dropped already); ARGV[3] '1' also ends its pool there (`l:<replica>`).
 */
const RELEASE_LUA = `
local field, pool = 'p:' .. ARGV[1], 'l:' .. ARGV[1]
local places = tonumber(ARGV[2])
for i = 1, #KEYS do
  local held = tonumber(redis.call('HGET', KEYS[i], field) or '0')
  if held > places then redis.call('HINCRBY', KEYS[i], field, -places)
  elseif held > 0 then redis.call('HDEL', KEYS[i], field, 'x:' .. ARGV[1], pool) end
  if ARGV[3] == '1' then redis.call('HDEL', KEYS[i], pool) end
end
return 0
`;

/**
 * Renews this replica's places in each count of KEYS until ARGV[2] (epoch ms, a decimal); ARGV[1] the
 * replica. Answers the places Redis counts for it in each (0: none, nothing renewed).
 */
const RENEW_LUA = `
local found = {}
for i = 1, #KEYS do
  found[i] = tonumber(redis.call('HGET', KEYS[i], 'p:' .. ARGV[1]) or '0')
  if found[i] > 0 then
    redis.call('HSET', KEYS[i], 'x:' .. ARGV[1], ARGV[2])
    local latest = math.max(tonumber(ARGV[2]), tonumber(redis.call('HGET', KEYS[i], 'e') or '0'))
    redis.call('HSET', KEYS[i], 'e', string.format('%.0f', latest))
    -- The count outlives its latest lease, as when places are taken (consume-script.ts).
    redis.call('PEXPIREAT', KEYS[i], string.format('%.0f', latest + ${EXPIRY_GRACE_MS}))
  end
end
return found
`;

/** This replica's places in one count: all of them are its `p:<replica>` in Redis. */
interface Pool {
  /** Places of requests in flight. */
  inUse: number;
  /** Places kept for requests to come, admitted without a call. */
  idle: number;
  /** Redis marks it a pool (`l:<replica>`): a place released stays idle; else it goes back to Redis. */
  open: boolean;
  /** Asked for its idle places back: no lease before this (the clock's ms). */
  pausedUntil: number;
  /** Redis surely counts its places until then: no request is admitted from an idle one after. */
  sureUntil: number;
  /** Other replicas' places at the latest answer: what a request's `remaining` counts. */
  others: number;
  /** The most places in use since the last trim, and whether a request took one. */
  peak: number;
  taken: boolean;
}

/**
 * This replica's places in concurrency counts in Redis (docs/decisions/0096, 0209). The consume script
 * takes them under this replica's id, with an expiry `leaseMs` ahead; this renews every count it holds
 * places in three times a lease. A count in which the script leased places ahead of requests holds a
 * pool: a request takes an idle place without a call, and gives it back to the pool when it ends. The
 * pool gives idle places back to Redis when it holds more than it needs (each second), when another
 * replica is refused for want of them (the reclaim channel), when it goes quiet and on close; a
 * consume call of the count gives back its idle places too, and takes what it needs again. Places
 * released outside a pool go back to Redis at the end of the turn, those of one decision in one call.
 * Idle places are used only while Redis surely still counts them: until a lease after the latest
 * heartbeat or call Redis answered finding them all (less the clocks' difference).
 *
 * It knows exactly the places it holds, idle ones too: after Redis lost them, those are put back
 * (recovery/places-ledger.ts), and so are the counts of a release Redis did not answer.
 */
export class ConcurrencyPlaces {
  /** Names this replica's places in every count. */
  readonly replica = randomUUID();
  /** Places held, by count key. */
  private readonly pools = new Map<string, Pool>();
  private readonly releaseScript: ScriptRunner;
  private readonly renewScript: ScriptRunner;
  /** Counts of releases Redis did not answer (it may not have run them), until they are put back. */
  private unreleased = new Set<string>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly trimmer: NodeJS.Timeout;
  /** How long before its lease in Redis a pool stops: the clocks' difference, a third of a short lease at most. */
  private readonly marginMs: number;
  /** Places to give back at the end of this turn, by the counts they are in (one decision's, joined). */
  private releasing = new Map<string, { counts: readonly string[]; places: number; close: boolean }>();
  private readonly releaseDue = (): Promise<unknown> => {
    const due = this.releasing;
    this.releasing = new Map();
    const sent: Promise<unknown>[] = [];
    for (const { counts, places, close } of due.values())
      sent.push(
        this.watches
          .measure('release', () => this.releaseScript(counts, [this.replica, places, close ? '1' : '']))
          // Unanswered (Redis away, or it ran and the answer was lost): the counts are put back as held.
          .catch(() => {
            for (const count of counts) this.unreleased.add(count);
          }),
      );
    return Promise.all(sent);
  };

  constructor(
    client: RedisClient,
    private readonly clock: () => number,
    readonly leaseMs: number,
    /** Each Redis call, timed and counted as its operation (`release`, `renew`). */
    private readonly watches: Pick<LimitWatches, 'measure'>,
  ) {
    this.releaseScript = defineKeyListScript(client, RELEASE_LUA);
    this.renewScript = defineKeyListScript(client, RENEW_LUA);
    this.marginMs = Math.min(CLOCKS_APART_MS, Math.floor(leaseMs / 3));
    this.heartbeat = setInterval(() => this.renew(), Math.max(1, Math.floor(leaseMs / 3))).unref();
    this.trimmer = setInterval(() => this.trim(), TRIM_MS).unref();
  }

  /** A call took a place in each of `counts` for a request: the function gives them back, once. */
  taken(counts: readonly string[]): () => void {
    for (const count of counts) this.use(this.poolOf(count));
    return this.releaser(counts);
  }

  /**
   * A request takes an idle place of each of `counts` at `nowMs`, when every one's pool holds one
   * Redis surely counts: the function gives them back, once; undefined when one does not.
   */
  fromPool(counts: readonly string[], nowMs: number): (() => void) | undefined {
    for (const count of counts) {
      const pool = this.pools.get(count);
      if (pool === undefined || pool.idle === 0 || !pool.open || nowMs >= pool.sureUntil) return undefined;
    }
    for (const count of counts) {
      const pool = this.pools.get(count)!;
      pool.idle--;
      this.use(pool);
    }
    return this.releaser(counts);
  }

  /** The places in flight in `count` as this replica last knew them: others' at the latest answer, its own now. */
  inFlight(count: string): number {
    const pool = this.pools.get(count);
    return pool === undefined ? 0 : pool.others + pool.inUse;
  }

  /**
   * What a consume call of `group` at `nowMs` gives back and asks for, per limit in KEYS order
   * (undefined: nothing): every idle place of each count (the call takes what its requests need, and
   * the pool starts again from its lease), and for a group that can pool when leases `canLease` (other
   * replicas can ask for them back), places for the pool: half what `requests` and those in flight
   * hold, MIN_PLACE_LEASE at least.
   */
  callTerms(group: Group, canLease: boolean, requests: number, nowMs: number): (PlaceTerms | undefined)[] {
    const terms: (PlaceTerms | undefined)[] = [];
    if (group.placeCounts.length === 0) return terms;
    const lease = canLease && canPool(group);
    for (const l of group.limits.flat()) {
      const count = group.keys[2 * terms.length]!;
      const pool = l.algorithm === 'concurrency' ? this.pools.get(count) : undefined;
      const asked =
        l.algorithm === 'concurrency' && lease && nowMs >= (pool?.pausedUntil ?? 0)
          ? Math.max(MIN_PLACE_LEASE, Math.ceil(((pool?.inUse ?? 0) + requests) / 2))
          : 0;
      const give = pool?.idle ?? 0;
      if (pool !== undefined) {
        pool.idle = 0;
        // Redis ends a pool it no longer holds a place of.
        if (pool.inUse === 0) pool.open = false;
      }
      terms.push(give === 0 && asked === 0 ? undefined : { give, lease: asked });
    }
    return terms;
  }

  /** Redis did not run a call of `counts` and `terms` (it found keys lost): what it gave back goes back now. */
  notRun(keys: readonly string[], terms: readonly (PlaceTerms | undefined)[]): void {
    terms.forEach((t, i) => {
      if (t !== undefined && t.give > 0) this.giveBack([keys[2 * i]!], t.give);
    });
  }

  /**
   * Redis answered a call sent at `nowMs` on `count`: it left `after` places in flight there (this
   * replica's `admitted` of it not yet taken), and leased it `granted` more for its pool: those.
   */
  answered(count: string, granted: number, after: number, admitted: number, nowMs: number): number {
    const pool = this.poolOf(count);
    pool.others = after - pool.inUse - admitted;
    if (admitted + granted > 0) this.sure(count, nowMs);
    // Asked back (or closing) since the call went: they go back at once.
    if (granted > 0 && nowMs < pool.pausedUntil) this.giveBack([count], granted, true);
    else if (granted > 0) {
      pool.open = true;
      pool.idle += granted;
    }
    return granted;
  }

  /** Another replica was refused for want of places in `count` at `nowMs`: the pool's idle places go back, and it ends for a while. */
  reclaimed(count: string, nowMs: number): void {
    const pool = this.pools.get(count);
    if (pool === undefined) return;
    pool.pausedUntil = nowMs + POOL_PAUSE_MS;
    this.endPool(count, pool);
  }

  /** Redis counts this replica's places in `count` as of a call it answered at `nowMs`, for a lease. */
  sure(count: string, nowMs: number): void {
    const pool = this.pools.get(count);
    if (pool !== undefined) pool.sureUntil = Math.max(pool.sureUntil, nowMs + this.leaseMs - this.marginMs);
  }

  /** Redis may have lost this replica's places in `count`: its pool admits nothing until they are put back (`sure`). */
  doubt(count: string): void {
    const pool = this.pools.get(count);
    if (pool !== undefined) pool.sureUntil = 0;
  }

  /** The places this replica holds in `count`, idle ones too. */
  heldIn(count: string): number {
    const pool = this.pools.get(count);
    return pool === undefined ? 0 : pool.inUse + pool.idle;
  }

  /** Whether this replica keeps a pool in `count` (a put-back marks it so again). */
  pooled(count: string): boolean {
    return this.pools.get(count)?.open ?? false;
  }

  /** Every count this replica holds places in. */
  *heldCounts(): IterableIterator<string> {
    for (const [count, pool] of this.pools) if (pool.inUse + pool.idle > 0) yield count;
  }

  /** The counts of releases Redis did not answer since the last call: their places are to be put back. */
  takeUnreleased(): Set<string> {
    const counts = this.unreleased;
    this.unreleased = new Set();
    return counts;
  }

  /** Sends the releases due now rather than at the end of the turn: a call sent after goes behind them. */
  sendReleases(): void {
    if (this.releasing.size > 0) void this.releaseDue();
  }

  private poolOf(count: string): Pool {
    let pool = this.pools.get(count);
    if (pool === undefined) {
      pool = {
        inUse: 0,
        idle: 0,
        open: false,
        pausedUntil: 0,
        sureUntil: 0,
        others: 0,
        peak: 0,
        taken: false,
      };
      this.pools.set(count, pool);
    }
    return pool;
  }

  private use(pool: Pool): void {
    pool.inUse++;
    pool.taken = true;
    if (pool.inUse > pool.peak) pool.peak = pool.inUse;
  }

  /** Gives back, once, the places of one request: to each open pool, to Redis elsewhere. */
  private releaser(counts: readonly string[]): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      let back: string[] | undefined;
      for (const count of counts) {
        const pool = this.pools.get(count)!;
        pool.inUse--;
        if (pool.open) pool.idle++;
        else (back ??= []).push(count);
      }
      if (back !== undefined) this.giveBack(back.length === counts.length ? counts : back, 1);
    };
  }

  /** Gives `places` of each of `counts` back to Redis at the end of the turn; `close` ends the pool there too. */
  private giveBack(counts: readonly string[], places: number, close = false): void {
    if (this.releasing.size === 0) setImmediate(this.releaseDue);
    const name = counts.join('|') + (close ? '|close' : '');
    const due = this.releasing.get(name);
    if (due === undefined) this.releasing.set(name, { counts, places, close });
    else due.places += places;
  }

  /** The pool of `count` ends: its idle places go back, and places released after go back too. */
  private endPool(count: string, pool: Pool): void {
    this.giveBack([count], pool.idle, true);
    pool.idle = 0;
    pool.open = false;
  }

  /**
   * Each pool keeps idle about half the most places it had in use since the last trim (MIN_PLACE_LEASE
   * at least), and gives back the rest once it holds twice that; one no request took from ends once
   * none is in use. Counts this replica holds nothing in are forgotten.
   */
  private trim(): void {
    const now = this.clock();
    for (const [count, pool] of this.pools) {
      const keep = pool.taken ? Math.max(MIN_PLACE_LEASE, Math.ceil(pool.peak / 2)) : 0;
      if (pool.open && keep === 0 && pool.inUse === 0) this.endPool(count, pool);
      else if (pool.open && pool.idle > 2 * keep) {
        this.giveBack([count], pool.idle - keep);
        pool.idle = keep;
      }
      if (!pool.open && pool.inUse + pool.idle === 0 && now >= pool.pausedUntil) this.pools.delete(count);
      pool.peak = pool.inUse;
      pool.taken = false;
    }
  }

  /**
   * One call per count (each has its own hash slot): a failed one is tried at the next heartbeat. One
   * Redis answers finding every place held when it went keeps the pool going for a lease from then.
   */
  private renew(): void {
    const now = this.clock();
    const until = String(now + this.leaseMs);
    for (const [count, pool] of this.pools) {
      const held = pool.inUse + pool.idle;
      if (held === 0) continue;
      this.watches
        .measure('renew', () => this.renewScript([count], [this.replica, until]))
        .then(
          (found) => {
            if ((found as number[])[0]! >= held) this.sure(count, now);
            // Redis lost some: the next call of the count finds it and puts them back.
            else this.doubt(count);
          },
          () => undefined,
        );
    }
  }

  /** Stops the heartbeat, and gives back every idle place (waiting CLOSE_WAIT_MS at most): places released after go back too. */
  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    clearInterval(this.trimmer);
    for (const [count, pool] of this.pools) {
      pool.pausedUntil = Infinity;
      if (pool.open || pool.idle > 0) this.endPool(count, pool);
    }
    if (this.releasing.size > 0) await settledWithin(this.releaseDue(), CLOSE_WAIT_MS);
  }
}
