import type { Logger } from '../ops/logger.js';
import { RepeatingTask } from '../ops/repeating-task.js';
import type { KeyChange } from './key-events.js';

/** One recorded change of a key, plan, consumer or route (an audit entry, written in the transaction of the change). */
export interface RecordedChange {
  readonly id: string;
  readonly targetType: string;
  readonly targetId: string;
  readonly time: Date;
}

/** How often each replica reads the record of changes. */
export const KEY_CHANGE_POLL_MS = 250;
/**
 * How far back each read looks: an entry's time is taken just before its transaction commits, on the
 * writing replica's clock, so it may become visible a little after that time.
 */
const LOOK_BACK_MS = 5_000;

/** What a recorded change makes stale (a key, a plan's keys, a consumer's keys, the route table), to be checked again rather than dropped. */
function changeOf({ targetType, targetId }: RecordedChange): KeyChange {
  if (targetType === 'plan') return { kind: 'plan', rateLimitId: targetId, recheck: true };
  if (targetType === 'consumer') return { kind: 'consumer', consumerId: targetId, recheck: true };
  if (targetType === 'route') return { kind: 'routes', recheck: true };
  return { kind: 'key', keyId: targetId, recheck: true };
}

/**
 * The second way key changes reach a replica. Change messages (Redis pub/sub) arrive in
 * milliseconds, but one can be lost: published while Redis was unreachable from the writing replica,
 * the change is stored and nobody hears of it, and caches would serve the old state for their entry
 * lifetime. Every change is also recorded in the database with its audit entry, in the same
 * transaction, so each replica reads the changes recorded lately, a few times a second, and tells its
 * key cache about each one it has not seen yet: a lost message costs at most one read interval. Most
 * were heard already, so the cache re-checks its entries rather than dropping them: a key it holds
 * keeps working through a database outage.
 */
export class KeyChangeFeed {
  /** Entries already told, by id, with their time: forgotten once they fall out of the look-back. */
  private readonly seen = new Map<string, number>();
  private readonly task: RepeatingTask;
  private failing = false;

  constructor(
    private readonly read: (since: Date) => Promise<readonly RecordedChange[]>,
    private readonly tell: (change: KeyChange) => void,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
    intervalMs = KEY_CHANGE_POLL_MS,
  ) {
    this.task = new RepeatingTask('recorded key changes', intervalMs, () => this.readOnce(), logger);
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    this.task.stop();
    return Promise.resolve();
  }

  /** One read now, or the one already running (a slow database is not asked twice at once). */
  poll(): Promise<void> {
    return this.task.run();
  }

  private async readOnce(): Promise<void> {
    try {
      const since = this.clock() - LOOK_BACK_MS;
      for (const recorded of await this.read(new Date(since))) {
        if (this.seen.has(recorded.id)) continue;
        this.seen.set(recorded.id, recorded.time.getTime());
        this.tell(changeOf(recorded));
      }
      for (const [id, time] of this.seen) if (time < since) this.seen.delete(id);
      if (this.failing) this.logger.info('reading recorded key changes again');
      this.failing = false;
    } catch (err) {
      // Once per outage, not four times a second.
      if (!this.failing)
        this.logger.warn(
          { err: (err as Error).message },
          'cannot read recorded key changes; relying on change messages and the key cache lifetime',
        );
      this.failing = true;
    }
  }
}
