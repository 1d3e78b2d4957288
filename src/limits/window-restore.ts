import type { RedisClient } from '../redis/connect.js';
import { BalanceLedger } from './balance-ledger.js';
import { BucketLedger } from './bucket-ledger.js';
import type { ConcurrencyPlaces } from './concurrency-places.js';
import { LossDetection } from './loss-detection.js';
import { WindowLedger } from './window-ledger.js';

/**
 * What the Redis limiter (redis-limiter.ts) keeps to restore windows, balances, token buckets and
 * concurrency places after Redis restarted empty or lost keys while up: the ledgers, and the checks of
 * Redis' restart marker.
 */
export class WindowRestore {
  /** What this replica took of each current window: put back if Redis restarts empty. */
  readonly ledger: WindowLedger;
  /** What this replica saw spent of each balance: put back if Redis restarts empty, and saved. */
  readonly balanceLedger: BalanceLedger;
  /** What this replica learned of each token bucket in its last decision there: put back if Redis loses it. */
  readonly buckets: BucketLedger;
  /** Notices Redis losing keys while it stays up, and holds decisions until they are put back. */
  readonly losses: LossDetection;
  /**
   * The first read of Redis' restart marker, made with the first call rather than in the constructor:
   * on a Cluster a command issued while scripts are still being defined opens an auto-pipeline that
   * lacks them.
   */
  private epochRead: Promise<boolean> | undefined;

  constructor(
    private readonly client: RedisClient,
    subscriber: RedisClient | undefined,
    prefix: string,
    private readonly clock: () => number,
    /** This replica's concurrency places: put back if Redis loses them. */
    readonly places: ConcurrencyPlaces,
  ) {
    this.balanceLedger = new BalanceLedger(client);
    this.buckets = new BucketLedger(client, () => this.ledger.marker);
    this.ledger = new WindowLedger(client, prefix, [this.balanceLedger, this.buckets, places], () =>
      this.losses.hold(),
    );
    this.losses = new LossDetection(
      client,
      subscriber,
      prefix,
      this.ledger,
      this.balanceLedger,
      this.buckets,
      places,
      clock,
    );
    // A connection that becomes ready again may have reached a Redis that restarted empty.
    client.on('ready', this.check);
  }

  /** Reads Redis' restart marker, and puts back what this replica took when Redis restarted empty. */
  readonly check = (): Promise<boolean> => this.losses.check(this.clock());

  /** The first check, made once. */
  firstCheck(): Promise<boolean> {
    return (this.epochRead ??= this.check());
  }

  async close(): Promise<void> {
    this.client.off('ready', this.check);
    await this.losses.close();
  }
}
