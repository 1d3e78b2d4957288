import { write } from 'node:fs';

/** How long the last lines may take to reach stdout's reader before the process ends without them. */
export const FLUSH_BOUND_MS = 500;
/** A non-blocking pipe that is full says EAGAIN: try again after this pause, never in a busy loop. */
const FULL_PIPE_RETRY_MS = 50;

/**
 * The logger's way to stdout. Lines are queued and written off the event loop, so no reader of stdout,
 * slow or gone, stops the process from serving or from ending on time. pino.destination() cannot promise
 * that: it flushes synchronously at process exit and retries a failed write there for ever, so once the
 * reader of stdout was gone (a broken pipe: `npm start | head`, a log shipper that died) SIGTERM never
 * ended the process. Here the first failed write ends logging (the lines have nowhere to go).
 */
export class LogDestination {
  private queued: string[] = [];
  private writing = false;
  private broken = false;
  private readonly drainWaiters = new Set<() => void>();

  constructor(private readonly fd = 1) {}

  write(line: string): void {
    if (this.broken) return;
    this.queued.push(line);
    if (!this.writing) this.writeQueued();
  }

  /**
   * Ends the process once every line logged so far is written (or writing failed), or after
   * FLUSH_BOUND_MS. A write still in the kernel then (stdout's reader is alive but reads nothing) would
   * hold process.exit itself, which waits for Node's thread pool: the process then ends by SIGKILL.
   */
  exit(code: number): void {
    if (!this.writing) process.exit(code);
    const end = () => {
      if (this.writing) process.kill(process.pid, 'SIGKILL');
      process.exit(code);
    };
    setTimeout(end, FLUSH_BOUND_MS);
    this.drainWaiters.add(end);
  }

  private writeQueued(): void {
    const chunk = Buffer.from(this.queued.join(''));
    this.queued = [];
    this.writing = true;
    this.writeFrom(chunk, 0);
  }

  private writeFrom(chunk: Buffer, offset: number): void {
    write(this.fd, chunk, offset, chunk.length - offset, null, (err, written) => {
      if (err?.code === 'EAGAIN') {
        setTimeout(() => this.writeFrom(chunk, offset), FULL_PIPE_RETRY_MS);
      } else if (err) {
        this.broken = true;
        this.queued = [];
        this.drained();
      } else if (offset + written < chunk.length) {
        this.writeFrom(chunk, offset + written);
      } else if (this.queued.length > 0) {
        this.writeQueued();
      } else {
        this.drained();
      }
    });
  }

  private drained(): void {
    this.writing = false;
    for (const waiter of this.drainWaiters) waiter();
  }
}
