import { randomBytes } from 'node:crypto';
import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, type RedisClient } from '../redis/connect.js';
import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import type { KeyChange, KeyEvents } from './key-events.js';

interface Envelope {
  /** The publishing replica, which has already told its own listeners. */
  readonly from: string;
  readonly change: KeyChange;
}

/**
 * Key changes over one Redis pub/sub channel, `<prefix>key-events`. Classic PUBLISH reaches every
 * node of a Cluster, so one channel serves both topologies. The publishing replica's listeners run
 * at once, before the round trip; a message lost while a subscriber reconnects makes it drop every
 * entry, and one lost otherwise is covered by the recorded changes (`KeyChangeFeed`).
 */
export class RedisKeyEvents implements KeyEvents {
  private readonly listeners: ((change: KeyChange) => void)[] = [];
  private readonly id = randomBytes(8).toString('hex');
  private readonly channel: string;
  private readonly subscribed: Promise<unknown>;

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    prefix: string,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {
    this.channel = prefix + 'key-events';
    subscriber.on('message', this.onMessage);
    // Changes published while the subscriber was reconnecting never arrive: drop every cached entry
    // rather than serve a deleted key until its lifetime ends.
    let connectedBefore = false;
    subscriber.on('ready', () => {
      if (connectedBefore) this.deliver({ kind: 'all' });
      connectedBefore = true;
    });
    // Kept as a promise so start-up can wait for it; the connection resubscribes after reconnects.
    this.subscribed = subscriber.subscribe(this.channel).catch((err: Error) => {
      logger.warn({ err: err.message }, 'key-event subscription failed; the key cache lifetime applies');
    });
  }

  /** Resolves once this replica receives other replicas' changes. */
  ready(): Promise<void> {
    return this.subscribed.then(() => undefined);
  }

  async publish(change: KeyChange): Promise<void> {
    this.deliver(change);
    const envelope: Envelope = { from: this.id, change };
    try {
      await this.client.publish(this.channel, JSON.stringify(envelope));
    } catch (err) {
      // The change itself is stored; other replicas see it when their cache entries expire.
      this.metrics.redisErrors.inc({ operation: 'publish' });
      this.logger.warn(
        { err: (err as Error).message, change },
        'key-change broadcast failed; other replicas rely on the cache lifetime',
      );
    }
  }

  /** A change this replica learnt of otherwise (the recorded changes): told to its own listeners only. */
  receive(change: KeyChange): void {
    this.deliver(change);
  }

  subscribe(listener: (change: KeyChange) => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    this.subscriber.off('message', this.onMessage);
    await settledWithin(this.subscriber.unsubscribe(this.channel), CLOSE_WAIT_MS);
  }

  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.channel) return;
    let envelope: Envelope;
    try {
      envelope = JSON.parse(message) as Envelope;
    } catch {
      this.logger.warn({ channel }, 'ignoring a malformed key-change message');
      return;
    }
    if (envelope.from !== this.id) this.deliver(envelope.change);
  };

  private deliver(change: KeyChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.logger.error({ err: (err as Error).message }, 'key-change listener failed');
      }
    }
  }
}
