import type { Logger } from './logger.js';

export interface RepeatingTaskOptions {
  /** Run once as soon as started (retention pruning), or only after the first interval. */
  readonly runAtStart?: boolean;
}

/**
 * Background work run every `intervalMs` (retention pruning, usage writes, the usage flush) and on
 * demand: a run asked for while one is going shares it, so a slow database is not asked again at once
 * (a tick meanwhile is skipped). A caller that must have what it recorded before asking written asks
 * with `runAnew`. A failure is logged and the next run tries again; the timer never keeps the process
 * alive.
 */
export class RepeatingTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** The run asked for with `runAnew` while another went: it starts as that one ends. */
  private following: Promise<void> | undefined;
  private readonly runAtStart: boolean;
  /** Stopped: no run follows, so a run that fails now was cut short by the shutdown, not one to retry. */
  private stopped = false;

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
    this.stopped = false;
    if (this.runAtStart) void this.run();
    this.timer = setInterval(() => void this.run(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer; a run already going finishes. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopped = true;
  }

  /** Resolves once the run going and the one asked to follow it, if any, have ended; never rejects. */
  ended(): Promise<void> {
    return this.following ?? this.running ?? Promise.resolve();
  }

  /** Runs the work now, or joins the run that is going. Never rejects. */
  run(): Promise<void> {
    this.running ??= this.runOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * A run that begins after this call: now, or once the run going has ended, one such run for every
   * ask meanwhile. The run going took its work as it began; what was recorded since is in this one
   * (the last write at shutdown). Never rejects.
   */
  runAnew(): Promise<void> {
    if (this.running === undefined) return this.run();
    this.following ??= this.running.then(() => {
      this.following = undefined;
      return this.run();
    });
    return this.following;
  }

  private async runOnce(): Promise<void> {
    try {
      await this.work();
    } catch (err) {
      const facts = { err: (err as Error).message, task: this.name };
      if (this.stopped) this.logger.info(facts, 'background task cut short by the shutdown');
      else this.logger.warn(facts, 'background task failed; will retry');
    }
  }
}
