import type { RedisClient } from '../../redis/connect.js';
import { lossChannel } from '../limiter-keys.js';
import type { RedisMarker } from './redis-marker.js';
import type { LostKeys } from './recovery.js';

/**
 * How long a replica that learns Redis lost keys holds its decisions: every live replica reads Redis'
 * marker each second (SWEEP_MS of the limiter) and puts back what it holds, so after this the counts
 * and balances hold what every live replica admitted.
 */
export const LOSS_HOLD_MS = 1_500;

/**
 * One kind of what a replica puts back after Redis lost it (windows, token buckets, concurrency places,
 * balances), each by its own rule.
 */
export interface LossShare {
  /** Redis lost everything (the marker changed): all this replica holds of the kind is owed. */
  owe(): void;
  /**
   * Puts back what is owed, and forgets what is over; resolves how many counts or balances it put back.
   * Throws when Redis stops answering: the next check goes on from there.
   */
  repay(nowMs: number): Promise<number>;
  /** Puts back what this replica holds of `key` (none when it is not of the kind), which Redis lost alone. */
  putBack(key: string, nowMs: number): Promise<number>;
}

/**
 * Notices that Redis lost keys, and has them put back (docs/decisions/0059).
 *
 * A loss of everything (`FLUSHALL`, `FLUSHDB`, a restart, the marker evicted) changes Redis' marker
 * (redis-marker.ts): each replica reads it every second and on reconnecting, and the consume script
 * finds a count below what the caller holds in it, or a balance below what it saw spent, and decides
 * nothing (consume-script.ts), which makes the replica read the marker at once. Either way every
 * replica puts back every share: its places in every current window, what it saw spent of every
 * balance, its record of every token bucket and its places in every concurrency limit
 * (docs/decisions/0125), and holds its decisions for LOSS_HOLD_MS from when it learned, when every live
 * replica has put back its own.
 *
 * A loss of some keys only (a count or a balance deleted, or evicted) leaves the marker: the replica
 * that finds them puts back its own share of those, tells the others on `<prefix>keys-lost` (who put
 * back theirs within a round trip), and holds its decisions for LOSS_HOLD_MS. A key put back is not
 * put back again for LOSS_HOLD_MS, however many replicas found it lost.
 */
export class LossDetection {
  /** Decisions wait until then (performance.now() ms). */
  private holdUntil = 0;
  /** When this replica last put everything back (performance.now() ms). */
  private everythingPutBackAt = -Infinity;
  /** Keys this replica put back after a loss of some keys only, and when. */
  private readonly putBack = new Map<string, number>();
  private readonly channel: string;
  private checking: Promise<boolean> | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient | undefined,
    prefix: string,
    private readonly clock: () => number,
    private readonly marker: RedisMarker,
    private readonly shares: readonly LossShare[],
  ) {
    this.channel = lossChannel(prefix);
    if (subscriber !== undefined) {
      subscriber.on('message', this.onLost);
      void subscriber.subscribe(this.channel).catch(() => {});
    }
  }

  /** How long decisions wait now (0: none). */
  holdMs(): number {
    return Math.max(0, this.holdUntil - performance.now());
  }

  /**
   * Reads Redis' marker (each second, on reconnecting, and when a call found keys lost): when it
   * changed, owes every share and holds; then has every share put back what it owes. One at a time: a
   * caller that comes meanwhile waits for the check under way. Never rejects. Resolves whether
   * everything was put back within LOSS_HOLD_MS (a loss found meanwhile is that one: its keys are back
   * already).
   */
  check(nowMs: number): Promise<boolean> {
    this.checking ??= this.checkNow(nowMs).finally(() => (this.checking = undefined));
    return this.checking;
  }

  /**
   * A call found `counts` and `balances` lost: everything, when the marker changed; else only those,
   * which this replica puts back and tells the others of. Holds its decisions. Never rejects.
   */
  async found(lost: LostKeys, nowMs: number): Promise<void> {
    this.hold();
    if (await this.check(nowMs)) return;
    await this.putBackKeys(lost, nowMs);
    await this.client.publish(this.channel, JSON.stringify(lost)).catch(() => {});
  }

  async close(): Promise<void> {
    this.subscriber?.off('message', this.onLost);
    if (this.subscriber?.status === 'ready') await this.subscriber.unsubscribe(this.channel).catch(() => {});
  }

  private async checkNow(nowMs: number): Promise<boolean> {
    let changed = false;
    try {
      changed = await this.marker.read();
      if (changed) {
        for (const share of this.shares) share.owe();
        this.hold();
      }
      for (const share of this.shares) await share.repay(nowMs);
    } catch {
      // Redis stopped answering midway: what is still owed is put back at the next check (a window
      // whose put-back timed out but ran is put back twice: it then admits fewer than its limit, never
      // more; a balance's put-back can be repeated without effect).
    }
    if (changed) {
      this.hold();
      this.everythingPutBackAt = performance.now();
    }
    return this.everythingPutBackAt + LOSS_HOLD_MS > performance.now();
  }

  /** Holds decisions for LOSS_HOLD_MS from now, on the process' own clock (a limiter's may stand still in tests). */
  private hold(): void {
    this.holdUntil = performance.now() + LOSS_HOLD_MS;
  }

  private readonly onLost = (channel: string, message: string): void => {
    if (channel !== this.channel || this.everythingPutBackAt + LOSS_HOLD_MS > performance.now()) return;
    void this.putBackKeys(JSON.parse(message) as LostKeys, this.clock());
  };

  /** Puts back this replica's share of keys lost alone, once per LOSS_HOLD_MS each. */
  private async putBackKeys({ counts, balances }: LostKeys, nowMs: number): Promise<void> {
    for (const [key, at] of this.putBack) if (at + LOSS_HOLD_MS <= nowMs) this.putBack.delete(key);
    for (const key of [...counts, ...balances]) {
      if (this.putBack.has(key)) continue;
      this.putBack.set(key, nowMs);
      try {
        // Whichever share holds the key puts it back: a window's count, a token bucket, a concurrency
        // limit's places or a balance.
        for (const share of this.shares) await share.putBack(key, nowMs);
      } catch {
        // Redis stopped answering: a call that finds the key still lost tells again.
        this.putBack.delete(key);
      }
    }
  }
}
