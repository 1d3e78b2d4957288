import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../redis/connect.js';
import { requestsIn, type UsageBatch, type UsageSink } from '../usage.js';
import { encodeUsage } from './field-codec.js';
import { usageKeys } from './key-layout.js';
import {
  definePushScript,
  pushArgCount,
  type PushCall,
  type PushedKey,
  type PushScript,
} from './push-script.js';

/**
 * A marker has to outlive every send of its push: the first may run late (Redis paused, then resumed,
 * runs what it had received), and the resends are made until one is answered, within a second of
 * Redis answering again. Ten minutes cover that with room; markers cost ~100 bytes a push.
 */
const PUSH_MARKER_TTL_S = 600;
/** Script arguments per usage push: a few hundred keys (about 2 ms of Redis time). */
const PUSH_CHUNK_ARGS = 4_000;

/** One script call's worth of a batch, and the requests it carries. */
interface Push {
  readonly call: PushCall;
  readonly requests: number;
}

/**
 * Replicas' usage sink: each push (a batch, or a few hundred of its keys) lands whole (one script)
 * in the live hashes, at most once: the script first sets the push's marker and does nothing if it
 * exists. A push keeps its marker from the moment it is cut until Redis answers it: one whose reply is
 * lost (a timeout, a dropped connection, a Redis paused for minutes) may still run, so it stays first
 * in line and is sent again, as the same push, with every later write, whatever the error was.
 * Applied now or already, never twice; pushes after it wait, so usage reaches Redis in order.
 */
export class RedisUsageSink implements UsageSink {
  private readonly push: PushScript;
  private readonly queue: Push[] = [];

  constructor(client: RedisClient, prefix: string) {
    this.push = definePushScript(client, usageKeys(prefix));
  }

  async write(batch: UsageBatch): Promise<void> {
    this.queue.push(...this.cut(batch));
    while (this.queue.length > 0) {
      await this.push(this.queue[0]!.call);
      this.queue.shift();
    }
  }

  heldRequests(): number {
    return this.queue.reduce((n, push) => n + push.requests, 0);
  }

  /**
   * One script per few hundred keys: a push runs in Redis for a few milliseconds, not for as long
   * as a whole second of a busy replica's keys would take (88 ms for 20,000 keys), during which every
   * replica's limiter calls would wait. A key goes whole into one push, however many fields it has.
   */
  private cut(batch: UsageBatch): Push[] {
    const pushes: Push[] = [];
    let keys: PushedKey[] = [];
    let part: UsageBatch = new Map();
    let args = 0;
    const close = () => {
      if (keys.length === 0) return;
      const call = { pushId: randomBytes(12).toString('base64url'), markerTtlS: PUSH_MARKER_TTL_S, keys };
      pushes.push({ call, requests: requestsIn(part) });
      keys = [];
      part = new Map();
      args = 0;
    };
    for (const [keyId, usage] of batch) {
      const fields = encodeUsage(usage);
      if (fields.counts.length + fields.sums.length === 0) continue;
      keys.push({ keyId, fields });
      part.set(keyId, usage);
      args += pushArgCount(fields);
      if (args >= PUSH_CHUNK_ARGS) close();
    }
    close();
    return pushes;
  }
}
