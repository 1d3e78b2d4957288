import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, type RedisClient } from '../redis/connect.js';
import { reclaimChannel } from './limiter-keys.js';

/** What a reclaim asks of this replica: every span counting in `count` gives back what it has not used. */
export interface ReclaimedCounts {
  reclaimed(count: string): void;
}

/**
 * The reclaim channel of the Redis limiter (redis-limiter.ts): leases are handed out only while other
 * replicas can ask this one for their units back (docs/decisions/0006-quota-leases.md). Without a
 * subscriber there are no leases.
 */
export class LeaseReclaim {
  readonly channel: string;
  /** Resolves once subscribed (undefined: no subscriber). */
  subscribed: Promise<unknown> | undefined;
  /** Subscribed to the reclaim channel: other replicas can ask for leased units back. */
  private listening = false;
  private counts: ReclaimedCounts | undefined;

  constructor(
    private readonly subscriber: RedisClient | undefined,
    prefix: string,
  ) {
    this.channel = reclaimChannel(prefix);
  }

  /** Subscribes; a reclaim heard goes to `counts`. */
  listen(counts: ReclaimedCounts): void {
    const subscriber = this.subscriber;
    if (subscriber === undefined) return;
    this.counts = counts;
    subscriber.on('message', this.onReclaim);
    // Until subscribed (and while the subscriber reconnects) no leases are asked for: nobody could
    // ask this replica to give them back.
    this.subscribed = subscriber.subscribe(this.channel).then(
      () => (this.listening = true),
      () => {},
    );
  }

  /** Whether a call may ask for leases now. */
  canLease(): boolean {
    return this.listening && this.subscriber!.status === 'ready';
  }

  private readonly onReclaim = (channel: string, count: string): void => {
    if (channel === this.channel) this.counts!.reclaimed(count);
  };

  /** The subscriber belongs to the composition root, which closes it after every user is done. */
  async close(): Promise<void> {
    if (this.subscriber === undefined) return;
    this.subscriber.off('message', this.onReclaim);
    // A subscriber that is reconnecting would queue the command until it is back.
    if (this.subscriber.status === 'ready')
      await settledWithin(this.subscriber.unsubscribe(this.channel), CLOSE_WAIT_MS);
  }
}
