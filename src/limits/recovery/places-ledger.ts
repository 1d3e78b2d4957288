import type { RedisClient } from '../../redis/connect.js';
import { defineScript, type ScriptRunner } from '../../redis/script.js';
import { CLOCKS_APART_MS, type ConcurrencyPlaces } from '../concurrency-places.js';
import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import type { LossShare } from './loss-detection.js';
import type { RedisMarker } from './redis-marker.js';
import type { PlacesKnown } from '../consume-script.js';

/** How long a put-back waits for consume calls out to be answered while others keep going out (none do after a loss). */
const SETTLE_MS = 1_000;

/**
 * Puts this replica's places (ARGV[1]) back into KEYS[1] after Redis lost them: exactly ARGV[2], the
 * places it holds (0: none, removed), idle ones in its pool too, lapsing at ARGV[3] unless renewed,
 * and stamps the count with Redis' marker as the replica read it (ARGV[4], '' none): a replica that
 * has not read it yet may not take places there before it has put its own back (docs/decisions/0125).
 * ARGV[5] '1' marks its pool (concurrency-places.ts), so that others refused ask for its idle places.
 */
const PUT_BACK_LUA = `
if ARGV[2] == '0' then
  redis.call('HDEL', KEYS[1], 'p:' .. ARGV[1], 'x:' .. ARGV[1], 'l:' .. ARGV[1])
  return 0
end
local latest = math.max(tonumber(ARGV[3]), tonumber(redis.call('HGET', KEYS[1], 'e') or '0'))
redis.call('HSET', KEYS[1], 'p:' .. ARGV[1], ARGV[2], 'x:' .. ARGV[1], ARGV[3], 'e', string.format('%.0f', latest))
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'k', ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', KEYS[1], 'l:' .. ARGV[1], '1')
else redis.call('HDEL', KEYS[1], 'l:' .. ARGV[1]) end
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', latest + ${EXPIRY_GRACE_MS}))
return 1
`;

/**
 * Puts this replica's places in concurrency counts (concurrency-places.ts) back after Redis lost them
 * (docs/decisions/0125). The replica knows exactly the places it holds, so when Redis lost them (a
 * flush, a deleted count: the consume script finds fewer of them than it holds, or the restart marker
 * changed) it puts back exactly those, once every consume call it has out is answered (their places
 * are then held) and the releases due are sent (they go first on the connection). A call or a release
 * Redis did not answer is settled the same way once it answers again, rather than left to lapse with
 * the lease.
 */
export class PlacesLedger implements LossShare {
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

  constructor(
    client: RedisClient,
    private readonly places: ConcurrencyPlaces,
    private readonly marker: RedisMarker,
  ) {
    this.putBackScript = defineScript(client, 'tollgatePutBackPlaces', PUT_BACK_LUA, 1);
  }

  /**
   * What the consume script checks Redis still has of `count` at `nowMs` (undefined for nothing): the
   * places this replica holds in it, until when it is sure to be there, and Redis'
   * marker as this replica last read it, which a count put back under another marker is lost to. The
   * marker goes even when it holds none: after a flush, a replica that never decided there could
   * otherwise take the places of one that has not put back yet.
   */
  knownOf(count: string, nowMs: number): PlacesKnown | undefined {
    const held = this.places.heldIn(count);
    let sure = this.sureUntil.get(count) ?? 0;
    if (sure <= nowMs) {
      this.sureUntil.delete(count);
      sure = 0;
    }
    const marker = this.marker.current ?? '';
    return held === 0 && sure === 0 && marker === '' ? undefined : { held, sureUntil: sure, marker };
  }

  /**
   * A decision at `nowMs` left `places` in flight in `count`, and took places when `took`: the count's
   * latest lease then ends at `nowMs` (some place is held past it) or, when it took some, a lease later.
   */
  saw(count: string, places: number, took: boolean, nowMs: number): void {
    if (places === 0) return;
    const until = nowMs + (took ? this.places.leaseMs : 0) + EXPIRY_GRACE_MS - CLOCKS_APART_MS;
    if (until > (this.sureUntil.get(count) ?? 0)) this.sureUntil.set(count, until);
  }

  /**
   * A consume call that may take places in `counts` went out: the function says, once, whether it was
   * answered (after its decisions) or not (it may still run, and take places nobody holds).
   */
  callOut(counts: readonly string[]): (answered: boolean) => void {
    this.callsOut++;
    let out = true;
    return (answered) => {
      if (!out) return;
      out = false;
      if (!answered) for (const count of counts) this.owed.add(count);
      if (--this.callsOut === 0) for (const resolve of this.whenAnswered.splice(0)) resolve();
    };
  }

  /** Redis lost its data (a restart, a flush): every count this replica holds places in is to be put back. */
  owe(): void {
    for (const count of this.places.heldCounts()) this.oweCount(count);
  }

  /** `count` is to be put back: its pool admits nothing until it is. */
  private oweCount(count: string): void {
    this.owed.add(count);
    this.places.doubt(count);
  }

  /**
   * Puts back the places of every count owed (and of every release unanswered); throws if Redis stops
   * answering (call again).
   */
  async repay(nowMs: number): Promise<number> {
    for (const [count, until] of this.sureUntil) if (until <= nowMs) this.sureUntil.delete(count);
    for (const count of this.places.takeUnreleased()) this.owed.add(count);
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
    if (this.places.heldIn(count) === 0) return 0;
    this.places.doubt(count);
    await this.settled();
    await this.putBackNow(count, nowMs);
    return 1;
  }

  /**
   * Resolves once no consume call is out (the places it took are then held) and the releases due are
   * sent: a put-back sent at once after it goes behind them on the connection, so Redis ends up holding
   * exactly what is held. After a loss decisions are held meanwhile (LOSS_HOLD_MS, loss-detection.ts);
   * else (a release unanswered) calls may keep going out: it gives up after SETTLE_MS, to try again at
   * the next check.
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
    this.places.sendReleases();
  }

  /**
   * Sets this replica's places in `count` to those it holds (none: removed), lapsing a lease from now,
   * stamped with the marker: its pool there may go on for that lease.
   */
  private async putBackNow(count: string, nowMs: number): Promise<void> {
    await this.putBackScript(
      [count],
      [
        this.places.replica,
        this.places.heldIn(count),
        String(nowMs + this.places.leaseMs),
        this.marker.current ?? '',
        this.places.pooled(count) ? '1' : '',
      ],
    );
    this.places.sure(count, nowMs);
  }
}
