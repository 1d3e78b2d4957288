/**
 * Takes what the limiters noticed (limit-notices.ts) to the outbox, once a second, on every replica:
 * each replica writes what it saw itself, and the once-keys make the outbox keep one of each however
 * many replicas write it. Never on the request path: a noticed threshold waits in memory for this
 * task, and while the database is down it waits longer (written when it is back).
 */
import type { Logger } from '../ops/logger.js';
import { RepeatingTask } from '../ops/repeating-task.js';
import type { Db } from '../store/db.js';
import { Outbox } from '../store/outbox.js';
import type { LimitNotices } from './limit-notices.js';

export class NoticeWriter {
  private readonly task: RepeatingTask;

  constructor(
    private readonly db: Db,
    private readonly notices: LimitNotices,
    logger: Logger,
    private readonly clock: () => number = Date.now,
    intervalMs = 1_000,
  ) {
    this.task = new RepeatingTask('limit notices', intervalMs, () => this.write(), logger, {
      runAtStart: false,
    });
  }

  start(): void {
    this.task.start();
  }

  /** Stops the schedule and writes what is left (one more try; what fails then is lost with the process). */
  async stop(): Promise<void> {
    this.task.stop();
    await this.task.runAnew();
  }

  /** Writes every notice taken now in one transaction; on failure they wait for the next run. */
  async write(): Promise<void> {
    const events = this.notices.take(this.clock());
    if (events.length === 0) return;
    try {
      await this.db.transaction().execute((trx) => new Outbox(trx).add(events));
    } catch (err) {
      this.notices.putBack(events);
      throw err;
    }
  }
}
