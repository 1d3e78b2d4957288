import type { RedisClient } from '../redis/connect.js';
import type { BalanceLedger } from './balance-ledger.js';
import type { BucketLedger } from './bucket-ledger.js';
import type { ConcurrencyPlaces } from './concurrency-places.js';
import { lossChannel } from './limiter-keys.js';
import type { WindowLedger } from './window-ledger.js';

/**
 * How long a replica that learns Redis lost keys holds its decisions: every live replica reads Redis'
 * marker each second (SWEEP_MS of the limiter) and puts back what it holds, so after this the counts
 * and balances hold what every live replica admitted.
 */
export const LOSS_HOLD_MS = 1_500;

/** What a replica tells the others it found lost: counts and balances by their keys. */
interface LostKeys {
  readonly counts: readonly string[];
  readonly balances: readonly string[];
}

/**
 * Notices that Redis lost keys while it stays up, and has them put back (docs/decisions/0059).
 *
 * A loss of everything (`FLUSHALL`, `FLUSHDB`, a restart, the marker evicted) changes Redis' marker
 * (window-ledger.ts): each replica reads it every second and on reconnecting, and the consume script
 * finds a count below what the caller holds in it, or a balance below what it saw spent, and decides
 * nothing (consume-script.ts), which makes the replica read the marker at once. Either way every
 * replica puts back its places in every current window, what it saw spent of every balance, its
 * record of every token bucket and its places in every concurrency limit (docs/decisions/0125), and
 * holds its decisions for LOSS_HOLD_MS from when it learned, when every live replica has put back its own.
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

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient | undefined,
    prefix: string,
    private readonly windows: WindowLedger,
    private readonly balances: BalanceLedger,
    private readonly buckets: BucketLedger,
    private readonly places: ConcurrencyPlaces,
    private readonly clock: () => number,
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
   * changed, puts everything back and holds. Never rejects. Resolves whether everything was put back
   * within LOSS_HOLD_MS (a loss found meanwhile is that one: its keys are back already).
   */
  async check(nowMs: number): Promise<boolean> {
    const before = this.windows.losses;
    await this.windows.check(nowMs);
    if (this.windows.losses !== before) {
      this.hold();
      this.everythingPutBackAt = performance.now();
    }
    return this.everythingPutBackAt + LOSS_HOLD_MS > performance.now();
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

  /** Holds decisions for LOSS_HOLD_MS from now, on the process' own clock (a limiter's may stand still in tests). */
  hold(): void {
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
        if (counts.includes(key)) {
          // A count is a window's, a token bucket's or a concurrency limit's: whichever holds it puts it back.
          await this.windows.putBack(key, nowMs);
          await this.buckets.putBack(key, nowMs);
          await this.places.putBack(key, nowMs);
        } else await this.balances.putBack(key);
      } catch {
        // Redis stopped answering: a call that finds the key still lost tells again.
        this.putBack.delete(key);
      }
    }
  }
}
