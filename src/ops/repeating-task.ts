import type { Logger } from './logger.js';

export interface RepeatingTaskOptions {
  /** Run once as soon as started (retention pruning), or only after the first interval. */
  readonly runAtStart?: boolean;
}

/**
 * Background work run every `intervalMs` (retention pruning, usage writes, the usage flush) and on
 * demand: a run asked for while one is going shares it. A failure is logged and the next run tries
 * again; the timer never keeps the process alive.
 */
export class RepeatingTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly runAtStart: boolean;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly work: () => Promise<void>,
    private readonly logger: Logger,
    { runAtStart = true }: RepeatingTaskOptions = {},
  ) {
    this.runAtStart = runAtStart;
  }

  start(): void {
    if (this.runAtStart) void this.run();
    this.timer = setInterval(() => void this.run(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer; a run already going finishes. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Runs the work now, or joins the run that is going. Never rejects. */
  run(): Promise<void> {
    this.running ??= this.runOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async runOnce(): Promise<void> {
    try {
      await this.work();
    } catch (err) {
      this.logger.warn(
        { err: (err as Error).message, task: this.name },
        'background task failed; will retry',
      );
    }
  }
}
