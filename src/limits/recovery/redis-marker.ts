import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../redis/connect.js';

/**
 * Redis' marker, `<prefix>epoch`: set once by whichever replica finds it missing, so a Redis that lost
 * its data (a restart without persistence, `FLUSHALL`, `FLUSHDB`, the marker evicted) carries another
 * one. Each replica reads it whenever its connection becomes ready (a restart drops every connection)
 * and every second (loss-detection.ts), so no request pays for the read. A marker that changed means
 * Redis lost everything; every put-back stamps what it puts back with the marker as this replica read
 * it, so a replica that has not read it yet finds the count lost rather than deciding against one
 * still short of its own places (restore-script.ts).
 */
export class RedisMarker {
  private readonly key: string;
  private last: string | undefined;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
  ) {
    this.key = prefix + 'epoch';
  }

  /** The marker as this replica last read it (undefined before the first read). */
  get current(): string | undefined {
    return this.last;
  }

  /** Reads the marker, setting it when missing: resolves whether it changed since the last read. */
  async read(): Promise<boolean> {
    let current = (await this.client.get(this.key)) ?? undefined;
    if (current === undefined) {
      const mine = randomBytes(12).toString('base64url');
      current =
        (await this.client.set(this.key, mine, 'NX')) === 'OK'
          ? mine
          : ((await this.client.get(this.key)) ?? mine);
    }
    const changed = this.last !== undefined && current !== this.last;
    this.last = current;
    return changed;
  }
}
