import type { Logger } from '../ops/logger.js';

/**
 * `lastUsedAt` of keys: the request path notes the time a key was presented (one map write), and the
 * notes go to the database once a second, one statement for all keys. The database keeps the latest
 * time whichever replica writes first, so a write retried after a failure can never move it back.
 */
export class LastUseTracker {
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;

  constructor(
    private readonly write: (lastUse: ReadonlyMap<string, number>) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  used(keyId: string, atMs: number): void {
    this.pending.set(keyId, atMs);
  }

  start(intervalMs = 1000): void {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Writes the times noted so far; concurrent calls share one write. */
  flush(): Promise<void> {
    this.writing ??= this.writeOnce().finally(() => (this.writing = undefined));
    return this.writing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
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
      this.logger.warn({ err: (err as Error).message, keys: batch.size }, 'last-use times not written; will retry');
    }
  }
}
