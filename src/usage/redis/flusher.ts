import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from '../../ops/logger.js';
import type { Metrics } from '../../ops/metrics.js';
import { RepeatingTask } from '../../ops/repeating-task.js';
import type { RedisClient } from '../../redis/connect.js';
import type { UsageRepository } from '../usage-repository.js';
import type { UsageBatch } from '../usage.js';
import { isRefusedData, SetAsideReport } from '../set-aside.js';
import { defineDropScript, type DropScript } from './drop-script.js';
import { decodeUsage } from './field-codec.js';
import { usageKeys, type UsageKeys } from './key-layout.js';
import { defineReadScript, type ReadScript } from './read-script.js';
import { defineSealScript, SEAL_MAX_KEYS, type SealScript } from './seal-script.js';
import { defineUnlockScript, type UnlockScript } from './unlock-script.js';

export interface FlusherOptions {
  readonly intervalMs?: number;
  /** Longer than a flush ever takes; a holder that dies blocks the others at most this long. */
  readonly lockTtlMs?: number;
}

/**
 * Moves usage from Redis into Postgres, one replica at a time (a lock with an expiry), without loss
 * or double counting even when a replica dies mid-flush:
 *   1. seal: rename the live hashes into batch <id> (atomic, one script per thousand keys, each
 *      its own batch);
 *   2. apply the batch to Postgres in one transaction that also records <id> in usage_batches, so
 *      applying it again is a no-op;
 *   3. drop the batch from Redis.
 * Every flush first re-applies batches left sealed by a flusher that died between 1 and 3, and a
 * Postgres outage leaves batches sealed in Redis until it is back. A batch whose data Postgres refuses
 * (a constraint, a NUL) is set aside: left sealed, named in an error line, tried at each flush. The lock only saves work:
 * correctness rests on step 2 being idempotent, so a flusher that outlives its lock does no harm.
 */
export class UsageFlusher {
  private readonly seal: SealScript;
  private readonly read: ReadScript;
  private readonly drop: DropScript;
  private readonly unlock: UnlockScript;
  private readonly layout: UsageKeys;
  private readonly lockTtlMs: number;
  private readonly flushes: RepeatingTask;
  private readonly report: SetAsideReport;
  /** The step in progress, for the failure metric: lock, seal, collect, apply (Postgres) or drop. */
  private stage = 'lock';
  /** Logs once per run of failures, not once a second. */
  private failing = false;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    private readonly repository: Pick<UsageRepository, 'applyBatch'>,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    { intervalMs = 1_000, lockTtlMs = 10_000 }: FlusherOptions = {},
  ) {
    this.layout = usageKeys(prefix);
    this.seal = defineSealScript(client, this.layout);
    this.read = defineReadScript(client);
    this.drop = defineDropScript(client, this.layout);
    this.unlock = defineUnlockScript(client);
    this.lockTtlMs = lockTtlMs;
    this.report = new SetAsideReport(logger, metrics);
    this.flushes = new RepeatingTask('usage flush', intervalMs, () => this.flushOnce(), logger, {
      runAtStart: false,
    });
  }

  start(): void {
    this.flushes.start();
  }

  /** Stops the timer and finishes (and, if it got the lock, runs) one last flush. */
  async stop(): Promise<void> {
    this.flushes.stop();
    await this.flush();
  }

  /** One flush if this replica gets the lock; concurrent calls share it. Never rejects. */
  flush(): Promise<void> {
    return this.flushes.run();
  }

  private async flushOnce(): Promise<void> {
    const token = randomBytes(16).toString('hex');
    this.stage = 'lock';
    try {
      if ((await this.client.set(this.layout.lock, token, 'PX', this.lockTtlMs, 'NX')) !== 'OK') {
        await this.reportLag();
        return;
      }
    } catch (err) {
      return this.fail(err);
    }
    try {
      this.stage = 'collect';
      // A batch left by a flusher that died, or by a Postgres outage, goes first; while it can't be
      // applied nothing new is sealed, so an outage leaves one batch plus the live hashes. A batch
      // whose data Postgres refuses is set aside instead (../set-aside.ts), and the flush goes on.
      for (const batchId of await this.client.smembers(this.layout.batches)) await this.move(batchId);
      this.stage = 'seal';
      const keyIds = await this.client.smembers(this.layout.dirty);
      let moved = false;
      // A batch per SEAL_MAX_KEYS keys, each sealed, applied and dropped before the next: no seal
      // holds Redis for long, and each batch is applied once under its own id.
      for (let i = 0; i < keyIds.length; i += SEAL_MAX_KEYS) {
        this.stage = 'seal';
        const batchId = randomUUID();
        if ((await this.seal({ batchId, keyIds: keyIds.slice(i, i + SEAL_MAX_KEYS) })) === 0) continue;
        await this.move(batchId);
        moved = true;
      }
      if (!moved) await this.client.set(this.layout.flushedAt, Date.now());
      this.metrics.usageStoreLag.set(0);
      // Batches Postgres refused stay sealed, set aside: they stop nothing sealed after them.
      this.metrics.usageBatchesSetAside.set(await this.client.scard(this.layout.setAside));
      if (this.failing) this.logger.info('usage flush to Postgres works again');
      this.failing = false;
    } catch (err) {
      this.fail(err);
    } finally {
      await this.unlock(this.layout.lock, token).catch(() => {});
    }
  }

  /** Applies one sealed batch (again, if a dead flusher already did) and removes it from Redis. */
  private async move(batchId: string): Promise<void> {
    this.stage = 'collect';
    const set = this.layout.batch(batchId);
    // A sealed batch never changes: its key set read here names all of its hashes.
    const keyIds = await this.client.smembers(set);
    const reply = await this.read({
      set,
      members: keyIds,
      hashes: keyIds.map((keyId) => this.layout.batchHash(batchId, keyId)),
    });
    if (reply[0] === 0) throw new Error(`sealed usage batch ${batchId} changed while it was read`);
    const batch: UsageBatch = new Map();
    keyIds.forEach((keyId, i) => batch.set(keyId, decodeUsage(reply[i + 1] as string[])));
    this.stage = 'apply';
    let applied: boolean;
    try {
      applied = await this.repository.applyBatch(batchId, batch);
    } catch (err) {
      if (!isRefusedData(err)) throw err;
      // Reported once, by whichever replica sets it aside first.
      if ((await this.client.sadd(this.layout.setAside, batchId)) === 1) this.report.setAside(batchId, err);
      return;
    }
    if (!applied)
      this.logger.info({ batchId }, 'usage batch was already in Postgres; removing it from Redis');
    this.stage = 'drop';
    const wasSetAside = (await this.client.sismember(this.layout.setAside, batchId)) === 1;
    await this.drop({ batchId, keyIds, nowMs: Date.now() });
    if (wasSetAside) this.report.applied(batchId);
  }

  /** Replicas without the lock still report how long ago any replica last completed a flush. */
  private async reportLag(): Promise<void> {
    const at = Number(await this.client.get(this.layout.flushedAt));
    if (at > 0) this.metrics.usageStoreLag.set(Math.max(0, Date.now() - at) / 1000);
    this.metrics.usageBatchesSetAside.set(await this.client.scard(this.layout.setAside));
  }

  private fail(err: unknown): void {
    this.metrics.usageFlushFailures.inc({ stage: this.stage });
    if (!this.failing) {
      this.logger.warn(
        { err: (err as Error).message, stage: this.stage },
        'usage flush to Postgres failed; the usage stays in Redis and is retried',
      );
    }
    this.failing = true;
    void this.reportLag().catch(() => {});
  }
}
