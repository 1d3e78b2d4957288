import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import {
  MAX_CUSTOMER_ID_LENGTH,
  MAX_ENDPOINT_LENGTH,
  MAX_ENDPOINTS_PER_KEY,
  OTHER_ENDPOINT,
  emptyKeyUsage,
  mergeBatch,
  PartialUsageWrite,
  type PendingPart,
  type PendingUsage,
  type UsageBatch,
  type UsageSink,
} from './usage.js';

/**
 * Counts usage in memory on the request path (a few map updates, no I/O) and hands the aggregate to
 * the sink once a second. A failed write is merged back and retried, so nothing is lost while the
 * store is down; SIGTERM calls `flush()` for the last partial second.
 */
export class UsageRecorder implements PendingUsage {
  private current: UsageBatch = new Map();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private lastSuccess = Date.now();

  constructor(
    private readonly sink: UsageSink,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  record(keyId: string, endpoint: string, customerId: string | undefined, ok: boolean, durationMs: number): void {
    let usage = this.current.get(keyId);
    if (!usage) this.current.set(keyId, (usage = emptyKeyUsage()));
    if (endpoint.length > MAX_ENDPOINT_LENGTH) endpoint = endpoint.slice(0, MAX_ENDPOINT_LENGTH);
    let e = usage.endpoints.get(endpoint);
    if (!e) {
      const name = usage.endpoints.size < MAX_ENDPOINTS_PER_KEY ? endpoint : OTHER_ENDPOINT;
      e = usage.endpoints.get(name);
      if (!e) usage.endpoints.set(name, (e = { requests: 0, successful: 0, failed: 0, totalDurationMs: 0 }));
    }
    e.requests++;
    e.totalDurationMs += durationMs;
    if (ok) e.successful++;
    else e.failed++;
    if (customerId !== undefined) {
      // The header is the client's to set: a bounded id keeps one request from bloating a row.
      if (customerId.length > MAX_CUSTOMER_ID_LENGTH) customerId = customerId.slice(0, MAX_CUSTOMER_ID_LENGTH);
      let c = usage.customers.get(customerId);
      if (!c) usage.customers.set(customerId, (c = { requests: 0, successful: 0, failed: 0 }));
      c.requests++;
      if (ok) c.successful++;
      else c.failed++;
    }
  }

  start(intervalMs = 1000): void {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Writes everything recorded so far; concurrent calls share one write. */
  flush(): Promise<void> {
    this.flushing ??= this.writeOnce().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    // A write that raced the first flush may have left a remainder.
    if (this.current.size > 0) await this.flush();
  }

  private async writeOnce(): Promise<void> {
    this.metrics.usageFlushLag.set((Date.now() - this.lastSuccess) / 1000);
    if (this.current.size === 0) {
      this.lastSuccess = Date.now();
      return;
    }
    const batch = this.current;
    this.current = new Map();
    try {
      await this.sink.write(batch);
      this.lastSuccess = Date.now();
    } catch (err) {
      // Keep what was not written: merged into what came since, it goes out with the next write.
      const unwritten = err instanceof PartialUsageWrite ? err.unwritten : batch;
      mergeBatch(unwritten, this.current);
      this.current = unwritten;
      this.metrics.usageFlushFailures.inc({ stage: 'record' });
      this.logger.warn({ err: (err as Error).message }, 'usage write failed; will retry');
    }
  }

  /**
   * What has not been handed to the sink yet. A batch being written is left out: it may already be in
   * the store, and counting it twice is worse than showing it a few milliseconds late.
   */
  pending(keyId: string): Promise<PendingPart[]> {
    const usage = this.current.get(keyId);
    return Promise.resolve(usage ? [{ usage }] : []);
  }
}
