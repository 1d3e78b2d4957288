import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { defineKeyListScript, type ScriptRunner } from '../redis/script.js';
import { EXPIRY_GRACE_MS } from './limiter-keys.js';
import type { LimitWatches } from './limit-watches.js';

/** A place's default lease: a replica that dies holding places gives them back this long after its last heartbeat. */
export const DEFAULT_CONCURRENCY_LEASE_MS = 30_000;

/**
 * Gives back ARGV[2] places of this replica (ARGV[1]) in each concurrency count of KEYS (never below
 * 0: places that lapsed were dropped already).
 */
const RELEASE_LUA = `
local field = 'p:' .. ARGV[1]
local places = tonumber(ARGV[2])
for i = 1, #KEYS do
  local held = tonumber(redis.call('HGET', KEYS[i], field) or '0')
  if held > places then redis.call('HINCRBY', KEYS[i], field, -places)
  elseif held > 0 then redis.call('HDEL', KEYS[i], field, 'x:' .. ARGV[1]) end
end
return 0
`;

/** Renews this replica's places in each count of KEYS until ARGV[2] (epoch ms, a decimal); ARGV[1] the replica. */
const RENEW_LUA = `
for i = 1, #KEYS do
  if redis.call('HEXISTS', KEYS[i], 'p:' .. ARGV[1]) == 1 then
    redis.call('HSET', KEYS[i], 'x:' .. ARGV[1], ARGV[2])
    local latest = math.max(tonumber(ARGV[2]), tonumber(redis.call('HGET', KEYS[i], 'e') or '0'))
    redis.call('HSET', KEYS[i], 'e', string.format('%.0f', latest))
    -- The count outlives its latest lease, as when places are taken (consume-script.ts).
    redis.call('PEXPIREAT', KEYS[i], string.format('%.0f', latest + ${EXPIRY_GRACE_MS}))
  end
end
return 0
`;

/**
 * This replica's places in concurrency counts in Redis (docs/decisions/0096). The consume script takes
 * them, under this replica's id, with an expiry `leaseMs` ahead; this renews every count it holds
 * places in three times a lease, and gives a place back when its request ends: the places of one
 * decision's counts given back in one turn go in one call. A replica that dies stops renewing: the
 * next decision on its counts after `leaseMs` drops its places.
 *
 * It knows exactly the places it holds: after Redis lost them, those are put back
 * (recovery/places-ledger.ts), and so are the counts of a release Redis did not answer.
 */
export class ConcurrencyPlaces {
  /** Names this replica's places in every count. */
  readonly replica = randomUUID();
  /** Places held, by count key. */
  private readonly held = new Map<string, number>();
  private readonly releaseScript: ScriptRunner;
  private readonly renewScript: ScriptRunner;
  /** Counts of releases Redis did not answer (it may not have run them), until they are put back. */
  private unreleased = new Set<string>();
  private readonly heartbeat: NodeJS.Timeout;
  /** Places to give back at the end of this turn, by the counts they are in (one decision's, joined). */
  private releasing = new Map<string, { counts: readonly string[]; places: number }>();
  private readonly releaseDue = (): void => {
    const due = this.releasing;
    this.releasing = new Map();
    for (const { counts, places } of due.values())
      // Unanswered (Redis away, or it ran and the answer was lost): the counts are put back as held.
      this.watches
        .measure('release', () => this.releaseScript(counts, [this.replica, places]))
        .catch(() => {
          for (const count of counts) this.unreleased.add(count);
        });
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
    this.heartbeat = setInterval(() => this.renew(), Math.max(1, Math.floor(leaseMs / 3))).unref();
  }

  /** A request took a place in each of `counts`: the function gives them back, once. */
  taken(counts: readonly string[]): () => void {
    for (const count of counts) this.held.set(count, (this.held.get(count) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      for (const count of counts) {
        const left = this.held.get(count)! - 1;
        if (left === 0) this.held.delete(count);
        else this.held.set(count, left);
      }
      if (this.releasing.size === 0) setImmediate(this.releaseDue);
      const name = counts.join('|');
      const due = this.releasing.get(name);
      if (due === undefined) this.releasing.set(name, { counts, places: 1 });
      else due.places++;
    };
  }

  /** The places this replica holds in `count`. */
  heldIn(count: string): number {
    return this.held.get(count) ?? 0;
  }

  /** Every count this replica holds places in. */
  heldCounts(): IterableIterator<string> {
    return this.held.keys();
  }

  /** The counts of releases Redis did not answer since the last call: their places are to be put back. */
  takeUnreleased(): Set<string> {
    const counts = this.unreleased;
    this.unreleased = new Set();
    return counts;
  }

  /** Sends the releases due now rather than at the end of the turn: a call sent after goes behind them. */
  sendReleases(): void {
    if (this.releasing.size > 0) this.releaseDue();
  }

  /** One call per count (each has its own hash slot): a failed one is tried at the next heartbeat. */
  private renew(): void {
    const until = String(this.clock() + this.leaseMs);
    for (const count of this.held.keys())
      this.watches
        .measure('renew', () => this.renewScript([count], [this.replica, until]))
        .catch(() => undefined);
  }

  close(): void {
    clearInterval(this.heartbeat);
  }
}

/** The places in flight a concurrency count holds at `nowMs`, as stored (`p:<replica>`, `x:<replica>`): the unexpired replicas'. */
export function placesIn(stored: Readonly<Record<string, string>>, nowMs: number): number {
  let places = 0;
  for (const [field, value] of Object.entries(stored)) {
    if (!field.startsWith('p:')) continue;
    const expiresAt = Number(stored['x:' + field.slice(2)] ?? 0);
    if (expiresAt >= nowMs) places += Number(value);
  }
  return places;
}
