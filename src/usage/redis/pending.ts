import type { Logger } from '../../ops/logger.js';
import type { Metrics } from '../../ops/metrics.js';
import type { RedisClient } from '../../redis/connect.js';
import type { PendingPart, PendingUsage } from '../usage.js';
import { decodeUsage } from './field-codec.js';
import { usageKeys, type UsageKeys } from './key-layout.js';
import { defineReadScript, type ReadScript } from './read-script.js';

/**
 * Reads that find the set of batches changed before they ran: each needs a seal or a drop in between,
 * and flushes run once a second, so a second attempt all but always succeeds.
 */
const READ_ATTEMPTS = 5;

/** What Redis still holds for a key (live and sealed batches): the detail view adds it to Postgres. */
export class RedisPendingUsage implements PendingUsage {
  private readonly read: ReadScript;
  private readonly layout: UsageKeys;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {
    this.layout = usageKeys(prefix);
    this.read = defineReadScript(client);
  }

  /**
   * While Redis is down the detail view shows what Postgres and this process hold rather than fail:
   * the usage in Redis is safe there and shows again once it answers.
   */
  async pending(keyId: string): Promise<PendingPart[]> {
    try {
      return await this.readPending(keyId);
    } catch (err) {
      this.metrics.redisErrors.inc({ operation: 'usage_pending' });
      this.logger.warn(
        { err: (err as Error).message, keyId },
        'usage still in Redis is left out of this key detail: Redis does not answer',
      );
      return [];
    }
  }

  /**
   * The count of seals; null while Redis does not answer, when `pending` shows nothing of Redis (and
   * logs the outage, so this does not again).
   */
  async sealMark(): Promise<unknown> {
    try {
      // No seal yet is a count of 0: null is kept for a Redis that does not answer.
      return (await this.client.get(this.layout.seals)) ?? '0';
    } catch {
      return null;
    }
  }

  /**
   * The key's live hash and its hash in every sealed batch, read in one atomic step, so a seal that
   * moves usage from one to the other never shows it twice or not at all. Most of the time no batch
   * is sealed and the first attempt, naming none, is the only one.
   */
  private async readPending(keyId: string): Promise<PendingPart[]> {
    let batchIds: readonly string[] = [];
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const hashes = [
        this.layout.live(keyId),
        ...batchIds.map((batchId) => this.layout.batchHash(batchId, keyId)),
      ];
      const reply = await this.read({ set: this.layout.batches, members: batchIds, hashes });
      if (reply[0] === 0) {
        batchIds = reply[1];
        continue;
      }
      const parts: PendingPart[] = [];
      const [, live, ...sealed] = reply;
      if (live!.length > 0) parts.push({ usage: decodeUsage(live!) });
      // Sealed batches carry their id: the reader leaves out those Postgres has applied meanwhile.
      sealed.forEach((fields, i) => {
        if (fields.length > 0) parts.push({ usage: decodeUsage(fields), batchId: batchIds[i]! });
      });
      return parts;
    }
    throw new Error(`the set of sealed usage batches changed under ${READ_ATTEMPTS} reads in a row`);
  }
}
