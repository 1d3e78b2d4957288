import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import { RepeatingTask } from '../ops/repeating-task.js';
import {
  MAX_CUSTOMER_ID_LENGTH,
  MAX_ENDPOINT_LENGTH,
  MAX_CUSTOMERS_PER_KEY,
  MAX_ENDPOINTS_PER_KEY,
  countedName,
  countRequest,
  dayOf,
  emptyBucket,
  emptyCounts,
  emptyDay,
  emptyEndpoint,
  emptyKeyUsage,
  entryOf,
  minuteOf,
  requestsIn,
  type PendingPart,
  type PendingUsage,
  type UsageBatch,
  type UsageSink,
} from './usage.js';

/** How often the recorder hands what it counted to the sink, unless told otherwise. */
const WRITE_INTERVAL_MS = 1_000;
/** While stopping, how often a refused write is tried again. */
const STOP_RETRY_MS = 250;

/**
 * Counts usage in memory on the request path (a few map updates, no I/O) and hands the aggregate to
 * the sink once a second. The sink keeps what it could not write and writes it again under the same
 * identity with the next flush, so nothing is lost while the store is down and nothing is counted
 * twice; SIGTERM calls `stop()` for the last partial second.
 */
export class UsageRecorder implements PendingUsage {
  private current: UsageBatch = new Map();
  private readonly writes: RepeatingTask;
  private lastSuccess = Date.now();

  constructor(
    private readonly sink: UsageSink,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    writeIntervalMs = WRITE_INTERVAL_MS,
  ) {
    this.writes = new RepeatingTask('usage write', writeIntervalMs, () => this.writeOnce(), logger, { runAtStart: false });
  }

  /**
   * One finished request of a key: `ok` when the backend answered below 400, `rateLimited` when the
   * limiter refused it, `atMs` when it arrived (its minute and day of usage over time).
   */
  record(keyId: string, endpoint: string, customerId: string | undefined, ok: boolean, durationMs: number, rateLimited = false, atMs = Date.now()): void {
    let usage = this.current.get(keyId);
    if (!usage) this.current.set(keyId, (usage = emptyKeyUsage()));
    countRequest(entryOf(usage.minutes, minuteOf(atMs), emptyBucket), ok, durationMs, rateLimited);
    const day = entryOf(usage.days, dayOf(atMs), emptyDay);
    if (endpoint.length > MAX_ENDPOINT_LENGTH) endpoint = endpoint.slice(0, MAX_ENDPOINT_LENGTH);
    // A name is capped once, for the totals, and its day counts it under the same name.
    const path = countedName(usage.endpoints, endpoint, MAX_ENDPOINTS_PER_KEY);
    countRequest(entryOf(usage.endpoints, path, emptyEndpoint), ok, durationMs, rateLimited);
    countRequest(entryOf(day.endpoints, path, emptyBucket), ok, durationMs, rateLimited);
    if (customerId !== undefined) {
      // The header is the client's to set: a bounded id keeps one request from bloating a row.
      if (customerId.length > MAX_CUSTOMER_ID_LENGTH) customerId = customerId.slice(0, MAX_CUSTOMER_ID_LENGTH);
      const customer = countedName(usage.customers, customerId, MAX_CUSTOMERS_PER_KEY);
      countRequest(entryOf(usage.customers, customer, emptyCounts), ok, durationMs, rateLimited);
      countRequest(entryOf(day.customers, customer, emptyBucket), ok, durationMs, rateLimited);
    }
  }

  /** Writes what was recorded every `writeIntervalMs`. */
  start(): void {
    this.writes.start();
  }

  /** Writes everything recorded so far; concurrent calls share one write. */
  flush(): Promise<void> {
    return this.writes.run();
  }

  /**
   * Writes what is left, trying again while the store refuses, until `deadlineMs` (epoch ms). Usage
   * still unwritten then is kept by the sink for the next start where it can (a journal), and only
   * otherwise dropped: logged at error level with its count and counted in
   * tollgate_usage_dropped_total, never silently.
   */
  async stop(deadlineMs = Date.now()): Promise<void> {
    this.writes.stop();
    await this.flush();
    while (this.unwritten() > 0 && Date.now() < deadlineMs) {
      await new Promise((r) => setTimeout(r, Math.min(STOP_RETRY_MS, Math.max(0, deadlineMs - Date.now()))));
      await this.flush();
    }
    // Every flush handed what was recorded to the sink: what it still holds, it may keep for the next start.
    const unwritten = this.unwritten();
    const dropped = unwritten > 0 && this.sink.preserve !== undefined ? this.sink.preserve() : unwritten;
    if (unwritten > dropped) this.logger.warn({ requests: unwritten - dropped }, 'usage kept in the journal until the next start');
    if (dropped > 0) {
      this.metrics.usageDropped.inc(dropped);
      this.logger.error({ requests: dropped }, 'usage could not be written before exit and is dropped');
    }
  }

  /** Requests recorded and not yet durable: still here, or held by the sink. */
  private unwritten(): number {
    return requestsIn(this.current) + this.sink.heldRequests();
  }

  private async writeOnce(): Promise<void> {
    this.metrics.usageFlushLag.set((Date.now() - this.lastSuccess) / 1000);
    if (this.current.size === 0 && this.sink.heldRequests() === 0) {
      this.lastSuccess = Date.now();
      return;
    }
    const batch = this.current;
    this.current = new Map();
    try {
      await this.sink.write(batch);
      this.lastSuccess = Date.now();
    } catch (err) {
      // The sink keeps what it could not write, under the identity it gave it: the next flush retries.
      this.metrics.usageFlushFailures.inc({ stage: 'record' });
      this.logger.warn({ err: (err as Error).message }, 'usage write failed; will retry');
    }
  }

  /**
   * What has not been handed to the sink yet. A batch being written is the sink's to show, if it can
   * tell whether the store has it: counting it twice is worse than showing it a moment late.
   */
  pending(keyId: string): Promise<PendingPart[]> {
    const usage = this.current.get(keyId);
    return Promise.resolve(usage ? [{ usage }] : []);
  }
}
