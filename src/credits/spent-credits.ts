import type { Logger } from '../ops/logger.js';
import { RepeatingTask } from '../ops/repeating-task.js';
import type { CreditRepository, Spend } from '../store/credit-repository.js';

/**
 * Keeps in the database what this replica's requests spent of each balance (docs/guides/credits.md: a balance
 * lives in the database, whatever becomes of Redis or of the process). The limiter counts spending
 * on the request path; this takes what it saw (`RateLimiter.spentBalances`) every `intervalMs` and
 * once more at shutdown, after the proxy has drained, and raises each balance's saved spend to it. A
 * SIGKILL loses what was spent since the last save: at most `intervalMs` plus the write in flight. A
 * save that fails is merged into the next, so nothing seen is dropped while the process lives.
 */
export class SpentCredits {
  /** By `scope:id`: the latest period seen of each balance, and the most spent in it, not saved yet. */
  private unsaved = new Map<string, Spend>();
  private readonly task: RepeatingTask;

  constructor(
    private readonly take: () => readonly Spend[],
    private readonly credits: Pick<CreditRepository, 'saveSpent'>,
    logger: Logger,
    intervalMs: number,
  ) {
    this.task = new RepeatingTask('spent credits', intervalMs, () => this.saveOnce(), logger, {
      runAtStart: false,
    });
  }

  start(): void {
    this.task.start();
  }

  /**
   * Saves what was spent so far: after a save going, which took less (RepeatingTask.runAnew);
   * concurrent calls share one save.
   */
  save(): Promise<void> {
    return this.task.runAnew();
  }

  /** Stops the timer and saves what is left (call once nothing is charged any more). */
  async stop(): Promise<void> {
    this.task.stop();
    await this.save();
  }

  private async saveOnce(): Promise<void> {
    for (const spend of this.take()) this.note(spend);
    if (this.unsaved.size === 0) return;
    const batch = [...this.unsaved.values()];
    this.unsaved = new Map();
    try {
      await this.credits.saveSpent(batch);
    } catch (err) {
      for (const spend of batch) this.note(spend);
      throw err;
    }
  }

  /** Keeps the later of two periods of one balance, or the larger spend of the same period. */
  private note(spend: Spend): void {
    const name = `${spend.scope}:${spend.id}`;
    const held = this.unsaved.get(name);
    if (
      held === undefined ||
      spend.epoch > held.epoch ||
      (spend.epoch === held.epoch &&
        (spend.window > held.window || (spend.window === held.window && spend.spent > held.spent)))
    )
      this.unsaved.set(name, spend);
  }
}
