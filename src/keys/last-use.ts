import type { Logger } from '../ops/logger.js';
import { RepeatingTask } from '../ops/repeating-task.js';

/** Noted uses reach the database this often. */
const WRITE_EVERY_MS = 1_000;

/**
 * `lastUsedAt` of keys: the request path notes the time a key was presented (one map write), and the
 * notes go to the database once a second, one statement for all keys. The database keeps the latest
 * time whichever replica writes first, so a write retried after a failure can never move it back.
 */
export class LastUseTracker {
  private pending = new Map<string, number>();
  private readonly task: RepeatingTask;

  constructor(
    private readonly write: (lastUse: ReadonlyMap<string, number>) => Promise<void>,
    logger: Logger,
  ) {
    this.task = new RepeatingTask('last-use times', WRITE_EVERY_MS, () => this.writeOnce(), logger, {
      runAtStart: false,
    });
  }

  used(keyId: string, atMs: number): void {
    this.pending.set(keyId, atMs);
  }

  start(): void {
    this.task.start();
  }

  /**
   * Writes the times noted so far: after a write going, which took less (RepeatingTask.runAnew);
   * concurrent calls share one write.
   */
  flush(): Promise<void> {
    return this.task.runAnew();
  }

  async stop(): Promise<void> {
    this.task.stop();
    await this.flush();
  }

  private async writeOnce(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.write(batch);
    } catch (err) {
      // Kept for the next write, unless a later use of the key was noted meanwhile.
      for (const [keyId, at] of batch) {
        const later = this.pending.get(keyId);
        if (later === undefined || later < at) this.pending.set(keyId, at);
      }
      throw err;
    }
  }
}
