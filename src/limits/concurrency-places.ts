import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { defineKeyListScript, defineScript, type ScriptRunner } from '../redis/script.js';
import { EXPIRY_GRACE_MS } from './limiter-keys.js';
import type { LimitWatches } from './limit-watches.js';

/** A place's default lease: a replica that dies holding places gives them back this long after its last heartbeat. */
export const DEFAULT_CONCURRENCY_LEASE_MS = 30_000;

/** How far apart replicas' and Redis' clocks may be (NTP). */
const CLOCKS_APART_MS = 1_000;

/** How long a put-back waits for consume calls out to be answered while others keep going out (none do after a loss). */
const SETTLE_MS = 1_000;

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
 * Puts this replica's places (ARGV[1]) back into KEYS[1] after Redis lost them: exactly ARGV[2], the
 * places it holds (0: none, removed), lapsing at ARGV[3] unless renewed, and stamps the count with
 * Redis' marker as the replica read it (ARGV[4], '' none): a replica that has not read it yet may not
 * take places there before it has put its own back (docs/decisions/0125).
 */
const PUT_BACK_LUA = `
if ARGV[2] == '0' then
  redis.call('HDEL', KEYS[1], 'p:' .. ARGV[1], 'x:' .. ARGV[1])
  return 0
end
local latest = math.max(tonumber(ARGV[3]), tonumber(redis.call('HGET', KEYS[1], 'e') or '0'))
redis.call('HSET', KEYS[1], 'p:' .. ARGV[1], ARGV[2], 'x:' .. ARGV[1], ARGV[3], 'e', string.format('%.0f', latest))
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'k', ARGV[4]) end
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', latest + ${EXPIRY_GRACE_MS}))
return 1
`;

/**
 * This replica's places in concurrency counts in Redis (docs/decisions/0096). The consume script takes
 * them, under this replica's id, with an expiry `leaseMs` ahead; this renews every count it holds
 * places in three times a lease, and gives a place back when its request ends: the places of one
 * decision's counts given back in one turn go in one call. A replica that dies stops renewing: the
 * next decision on its counts after `leaseMs` drops its places.
 *
 * It knows exactly the places it holds, so when Redis lost them (a flush, a deleted count: the consume
 * script finds fewer of them than it holds, or the restart marker changed) it puts back exactly those
 * (docs/decisions/0125), once every consume call it has out is answered (their places are then in
 * `held`) and the releases due are sent (they go first on the connection). A release Redis did not
 * answer is settled the same way once it answers again, rather than left to lapse with the lease.
 */
export class ConcurrencyPlaces {
  /** Names this replica's places in every count. */
  readonly replica = randomUUID();
  /** Places held, by count key. */
  private readonly held = new Map<string, number>();
  private readonly releaseScript: ScriptRunner;
  private readonly renewScript: ScriptRunner;
  private readonly putBackScript: ScriptRunner;
  /**
   * Until when each count this replica decided on is sure to be in Redis (epoch ms): a count outlives
   * the latest lease in it (`e`) by EXPIRY_GRACE_MS, less a second for clocks a little apart.
   */
  private readonly sureUntil = new Map<string, number>();
  /** Counts whose places are to be put back: after a flush, or a call or release Redis did not answer. */
  private readonly owed = new Set<string>();
  /** Consume calls out that may take places, and who waits for them to be answered. */
  private callsOut = 0;
  private readonly whenAnswered: (() => void)[] = [];
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
          for (const count of counts) this.owed.add(count);
        });
  };

  constructor(
    client: RedisClient,
    private readonly clock: () => number,
    readonly leaseMs: number,
    /** Each Redis call, timed and counted as its operation (`release`, `renew`). */
    private readonly watches: Pick<LimitWatches, 'measure'>,
    /** Redis' marker as this replica last read it (WindowLedger.marker): undefined before the first read. */
    private readonly marker: () => string | undefined,
  ) {
    this.releaseScript = defineKeyListScript(client, RELEASE_LUA);
    this.renewScript = defineKeyListScript(client, RENEW_LUA);
    this.putBackScript = defineScript(client, 'tollgatePutBackPlaces', PUT_BACK_LUA, 1);
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

  /**
   * What the consume script checks Redis still has of `count` at `nowMs` (`held:sureUntil:marker`, 0
   * for nothing): the places this replica holds in it, until when it is sure to be there, and Redis'
   * marker as this replica last read it, which a count put back under another marker is lost to. The
   * marker goes even when it holds none: after a flush, a replica that never decided there could
   * otherwise take the places of one that has not put back yet.
   */
  knownOf(count: string, nowMs: number): string | 0 {
    const held = this.held.get(count) ?? 0;
    let sure = this.sureUntil.get(count) ?? 0;
    if (sure <= nowMs) {
      this.sureUntil.delete(count);
      sure = 0;
    }
    const marker = this.marker() ?? '';
    return held === 0 && sure === 0 && marker === '' ? 0 : `${held}:${sure}:${marker}`;
  }

  /**
   * A decision at `nowMs` left `places` in flight in `count`, and took places when `took`: the count's
   * latest lease then ends at `nowMs` (some place is held past it) or, when it took some, a lease later.
   */
  saw(count: string, places: number, took: boolean, nowMs: number): void {
    if (places === 0) return;
    const until = nowMs + (took ? this.leaseMs : 0) + EXPIRY_GRACE_MS - CLOCKS_APART_MS;
    if (until > (this.sureUntil.get(count) ?? 0)) this.sureUntil.set(count, until);
  }

  /** A consume call on `counts` went unanswered: it may still run, and take places nobody holds. */
  unanswered(counts: readonly string[]): void {
    for (const count of counts) this.owed.add(count);
  }

  /** A consume call that may take places went out: the function says it was answered (after its decisions). */
  calling(): () => void {
    this.callsOut++;
    let out = true;
    return () => {
      if (!out) return;
      out = false;
      if (--this.callsOut === 0) for (const answered of this.whenAnswered.splice(0)) answered();
    };
  }

  /** Redis lost its data (a restart, a flush): every count this replica holds places in is to be put back. */
  owe(): void {
    for (const count of this.held.keys()) this.owed.add(count);
  }

  /** Puts back the places of every count owed; throws if Redis stops answering (call again). */
  async repay(nowMs: number): Promise<number> {
    for (const [count, until] of this.sureUntil) if (until <= nowMs) this.sureUntil.delete(count);
    if (this.owed.size === 0) return 0;
    await this.settled();
    const counts = [...this.owed];
    // Sent in this turn, before any call that could take places.
    await Promise.all(counts.map((count) => this.putBackNow(count, nowMs)));
    for (const count of counts) this.owed.delete(count);
    return counts.length;
  }

  /** Puts back this replica's places in `count`, which Redis lost alone: 1 when it holds some there. */
  async putBack(count: string, nowMs: number): Promise<number> {
    if (!this.held.has(count)) return 0;
    await this.settled();
    await this.putBackNow(count, nowMs);
    return 1;
  }

  /**
   * Resolves once no consume call is out (the places it took are then in `held`) and the releases due
   * are sent: a put-back sent at once after it goes behind them on the connection, so Redis ends up
   * holding exactly `held`. After a loss decisions are held meanwhile (LOSS_HOLD_MS); else (a release
   * unanswered) calls may keep going out: it gives up after SETTLE_MS, to try again at the next check.
   */
  private async settled(): Promise<void> {
    const deadline = performance.now() + SETTLE_MS;
    for (;;) {
      if (this.callsOut > 0) await new Promise<void>((resolve) => this.whenAnswered.push(resolve));
      // The decisions' own continuations (taken) run first.
      await new Promise(setImmediate);
      if (this.callsOut === 0) break;
      if (performance.now() > deadline) throw new Error('consume calls kept going out');
    }
    if (this.releasing.size > 0) this.releaseDue();
  }

  /** Sets this replica's places in `count` to those it holds (none: removed), lapsing a lease from now, stamped with the marker. */
  private putBackNow(count: string, nowMs: number): Promise<unknown> {
    return this.putBackScript(
      [count],
      [this.replica, this.held.get(count) ?? 0, String(nowMs + this.leaseMs), this.marker() ?? ''],
    );
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
