import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, type RedisClient } from '../redis/connect.js';
import { reclaimChannel } from './limiter-keys.js';

/**
 * The reclaim channel of the Redis limiter (redis-limiter.ts): leases are handed out only while other
 * replicas can ask this one for their units back (docs/decisions/0006-quota-leases.md). Without a
 * subscriber there are no leases. What a reclaim asks is heard by the spans (limit-registry.ts).
 */
export class LeaseReclaim {
  readonly channel: string;
  /** Resolves once subscribed (undefined: no subscriber). */
  readonly subscribed: Promise<unknown> | undefined;
  /** Subscribed to the reclaim channel: other replicas can ask for leased units back. */
  private listening = false;

  constructor(
    private readonly subscriber: RedisClient | undefined,
    prefix: string,
  ) {
    this.channel = reclaimChannel(prefix);
    // Until subscribed (and while the subscriber reconnects) no leases are asked for: nobody could
    // ask this replica to give them back.
    this.subscribed = subscriber?.subscribe(this.channel).then(
      () => (this.listening = true),
      () => {},
    );
  }

  /** Whether a call may ask for leases now. */
  canLease(): boolean {
    return this.listening && this.subscriber!.status === 'ready';
  }

  /** The subscriber belongs to the composition root, which closes it after every user is done. */
  async close(): Promise<void> {
    if (this.subscriber === undefined) return;
    // A subscriber that is reconnecting would queue the command until it is back.
    if (this.subscriber.status === 'ready')
      await settledWithin(this.subscriber.unsubscribe(this.channel), CLOSE_WAIT_MS);
  }
}
