import type { KeyEvents } from '../keys/key-events.js';
import type { Logger } from '../ops/logger.js';
import type { RouteConfig } from '../plans/route.js';

/** How soon a read of the table that failed (the database did not answer) is tried again. */
const RETRY_MS = 1_000;

/**
 * This replica's copy of the route table. Read at start, and again whenever a change is announced
 * (a change message, or the recorded change each replica reads a few times a second), so a change
 * reaches every replica within a second. Each read hands the whole table to the listeners, which
 * build what the hot path reads from it; requests never wait for a read.
 */
export class RouteTable {
  private readonly listeners: ((routes: readonly RouteConfig[]) => void)[] = [];
  private running: Promise<void> | undefined;
  /** A read asked for while one runs: a change may have committed after the running read began. */
  private next: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failing = false;
  private stopped = false;

  constructor(
    private readonly load: () => Promise<readonly RouteConfig[]>,
    private readonly logger: Logger,
  ) {}

  /** Called with the table after every read, in the order the listeners came. */
  onChange(listener: (routes: readonly RouteConfig[]) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the table again on every announced change of it (and on `all`: changes may have been missed). */
  follow(events: KeyEvents): void {
    events.subscribe((change) => {
      if (change.kind === 'routes' || change.kind === 'all') void this.reload();
    });
  }

  /** The first read, before serving: a table that cannot be read fails the start rather than route wrongly. */
  async start(): Promise<void> {
    this.tell(await this.load());
  }

  /**
   * Reads the table again. Calls while a read runs share one more read after it; the promise settles
   * once a read begun after the call has ended (a failed one is logged and tried again shortly).
   */
  reload(): Promise<void> {
    if (this.running === undefined) {
      this.running = this.readOnce().finally(() => (this.running = undefined));
      return this.running;
    }
    this.next ??= this.running.then(() => {
      this.next = undefined;
      return this.reload();
    });
    return this.next;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
  }

  private async readOnce(): Promise<void> {
    clearTimeout(this.retry);
    let routes: readonly RouteConfig[];
    try {
      routes = await this.load();
    } catch (err) {
      // Once per outage; the table in force stays until a read succeeds.
      if (!this.failing)
        this.logger.warn(
          { err: (err as Error).message },
          'cannot read the route table; routing by the previous one and retrying',
        );
      this.failing = true;
      if (!this.stopped) this.retry = setTimeout(() => void this.reload(), RETRY_MS).unref();
      return;
    }
    if (this.failing) this.logger.info('reading the route table again');
    this.failing = false;
    this.tell(routes);
  }

  private tell(routes: readonly RouteConfig[]): void {
    for (const listener of this.listeners) {
      try {
        listener(routes);
      } catch (err) {
        this.logger.error({ err }, 'route table listener failed');
      }
    }
  }
}
