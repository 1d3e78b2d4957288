import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import { RepeatingTask } from '../ops/repeating-task.js';
import { binOf } from './latency-histogram.js';
import { mergeFiledUsage } from './merge-usage.js';
import {
  MAX_CUSTOMERS_PER_KEY,
  MAX_ENDPOINTS_PER_KEY,
  MAX_ROUTES_PER_KEY,
  NO_ROUTE_ID,
  countedName,
  countBucketRequest,
  countEndpointRequest,
  countRequest,
  dayOf,
  emptyBucket,
  emptyCounts,
  emptyDay,
  emptyEndpoint,
  emptyFiledUsage,
  emptyKeyUsage,
  entryOf,
  minuteOf,
  requestsOf,
  type FiledUsage,
  type HandOvers,
  type KeyUsage,
  type PendingPart,
  type PendingUsage,
  type RequestFacts,
  type UsageBatch,
  type UsageSink,
} from './usage.js';
import { keptCustomerId } from '../plans/customer-id.js';
import { cutEndpoint } from './name-cuts.js';
import {
  MAX_FAILURES_PER_KEY_MINUTE,
  cutText,
  emptyFailureLog,
  leftOutKey,
  type FailureLog,
} from './failure-log.js';

/** What a key did since the last hand-over, by the consumer it was filed under (null: none). */
type Recorded = Map<string | null, FiledUsage>;

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
  private current = new Map<string, Recorded>();
  /** Each key's failures since the last hand-over (failure-log.ts). */
  private failures = new Map<string, FailureLog>();
  /**
   * Entries kept per key in its latest minute, across hand-overs: bounds what this replica holds and
   * hands over; the database bounds what the log keeps for the fleet (failure-log-repository.ts).
   */
  private readonly keptInMinute = new Map<string, { minuteMs: number; kept: number }>();
  /** The minutes failures were recorded in since the last hand-over. */
  private failureMinutes = new Set<number>();
  private readonly writes: RepeatingTask;
  private lastSuccess = Date.now();
  /** For the reader (PendingUsage.handOvers). */
  private begun = 0;
  private writing = false;

  constructor(
    private readonly sink: UsageSink,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    writeIntervalMs = WRITE_INTERVAL_MS,
  ) {
    this.writes = new RepeatingTask('usage write', writeIntervalMs, () => this.writeOnce(), logger, {
      runAtStart: false,
    });
  }

  /**
   * One finished request of a key, counted once, under the consumer the key belongs to (the whole
   * of the key's usage is put together at hand-over, off the request path).
   */
  record(facts: RequestFacts): void {
    let key = this.current.get(facts.keyId);
    if (!key) this.current.set(facts.keyId, (key = new Map()));
    let usage = key.get(facts.consumerId);
    if (!usage) key.set(facts.consumerId, (usage = emptyFiledUsage()));
    // A name is capped once, for the totals, and its day counts it under the same name.
    const path = countedName(usage.endpoints, cutEndpoint(facts.endpoint), MAX_ENDPOINTS_PER_KEY);
    const bin = binOf(facts.durationMs);
    countBucketRequest(entryOf(usage.minutes, minuteOf(facts.atMs), emptyBucket), facts, bin);
    const day = entryOf(usage.days, dayOf(facts.atMs), emptyDay);
    countEndpointRequest(entryOf(usage.endpoints, path, emptyEndpoint), facts);
    countBucketRequest(entryOf(day.endpoints, path, emptyBucket), facts, bin);
    const route = countedName(day.routes, facts.routeId ?? NO_ROUTE_ID, MAX_ROUTES_PER_KEY);
    countBucketRequest(entryOf(day.routes, route, emptyBucket), facts, bin);
    if (facts.failure !== undefined && facts.status >= 400) this.recordFailure(facts);
    // The header is the client's to set: a bounded, clean id keeps one request from bloating a row.
    const kept = keptCustomerId(facts.customerId);
    if (kept === undefined) return;
    const customer = countedName(usage.customers, kept, MAX_CUSTOMERS_PER_KEY);
    countRequest(entryOf(usage.customers, customer, emptyCounts), facts);
    countBucketRequest(entryOf(day.customers, customer, emptyBucket), facts, bin);
  }

  /**
   * A failed request into its key's failure log: kept while the key has fewer than
   * MAX_FAILURES_PER_KEY_MINUTE entries in its minute, else counted as left out by minute and code.
   */
  private recordFailure(facts: RequestFacts): void {
    const failure = facts.failure!;
    const log = entryOf(this.failures, facts.keyId, emptyFailureLog);
    const minuteMs = minuteOf(facts.atMs);
    this.failureMinutes.add(minuteMs);
    let kept = this.keptInMinute.get(facts.keyId);
    if (kept === undefined || kept.minuteMs !== minuteMs)
      this.keptInMinute.set(facts.keyId, (kept = { minuteMs, kept: 0 }));
    if (kept.kept >= MAX_FAILURES_PER_KEY_MINUTE) {
      const name = leftOutKey(minuteMs, facts.consumerId, failure.code);
      log.leftOut.set(name, (log.leftOut.get(name) ?? 0) + 1);
      return;
    }
    kept.kept++;
    log.entries.push({
      atMs: facts.atMs,
      requestId: cutText(failure.requestId),
      consumerId: facts.consumerId,
      method: cutText(failure.method),
      path: cutEndpoint(facts.endpoint),
      routeId: facts.routeId,
      status: facts.status,
      code: failure.code,
      limit: failure.limit,
      clientAddress: failure.clientAddress === null ? null : cutText(failure.clientAddress),
      customerId: keptCustomerId(facts.customerId) ?? null,
      durationMs: facts.durationMs,
    });
  }

  /** Writes what was recorded every `writeIntervalMs`. */
  start(): void {
    this.writes.start();
  }

  /**
   * Writes everything recorded so far: after a write going, which took less (RepeatingTask.runAnew);
   * concurrent calls share one write.
   */
  flush(): Promise<void> {
    return this.writes.runAnew();
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
    if (unwritten > dropped)
      this.logger.warn({ requests: unwritten - dropped }, 'usage kept in the journal until the next start');
    if (dropped > 0) {
      this.metrics.usageDropped.inc(dropped);
      this.logger.error({ requests: dropped }, 'usage could not be written before exit and is dropped');
    }
  }

  /** Requests recorded and not yet durable: still here, or held by the sink. */
  private unwritten(): number {
    let n = this.sink.heldRequests();
    for (const parts of this.current.values()) for (const usage of parts.values()) n += requestsOf(usage);
    return n;
  }

  private async writeOnce(): Promise<void> {
    this.metrics.usageFlushLag.set((Date.now() - this.lastSuccess) / 1000);
    if (this.current.size === 0 && this.sink.heldRequests() === 0) {
      this.lastSuccess = Date.now();
      return;
    }
    const batch: UsageBatch = new Map();
    for (const [keyId, parts] of this.current)
      batch.set(keyId, { ...keyUsageOf(parts), failures: this.failures.get(keyId) });
    this.begun++;
    this.writing = true;
    this.current = new Map();
    this.failures = new Map();
    // A count matters while its key fails in its minute: one of a minute no failure came in since the
    // last hand-over goes (a key that reached the bound and still fails keeps its minute seen).
    for (const [keyId, kept] of this.keptInMinute)
      if (!this.failureMinutes.has(kept.minuteMs)) this.keptInMinute.delete(keyId);
    this.failureMinutes = new Set();
    try {
      await this.sink.write(batch);
      this.lastSuccess = Date.now();
    } catch (err) {
      // The sink keeps what it could not write, under the identity it gave it: the next flush retries.
      this.metrics.usageFlushFailures.inc({ stage: 'record' });
      this.logger.warn({ err: (err as Error).message }, 'usage write failed; will retry');
    } finally {
      this.writing = false;
    }
  }

  /**
   * What has not been handed to the sink yet. A batch being written may be downstream already or not
   * yet: the reader, told by `handOvers`, reads again rather than count it twice or miss it.
   */
  pending(keyId: string): Promise<PendingPart[]> {
    const parts = this.current.get(keyId);
    return Promise.resolve(parts ? [{ usage: keyUsageOf(parts) }] : []);
  }

  handOvers(): HandOvers {
    return { begun: this.begun, underWay: this.writing };
  }
}

/**
 * A key's recorded usage as a batch carries it: the whole, and each consumer's part. Usage of no
 * consumer is the whole as it stands; otherwise the whole is the parts added up, each part holding
 * its names as the whole does (decision record 0026).
 */
function keyUsageOf(parts: Recorded): KeyUsage {
  const unfiled = parts.get(null);
  if (unfiled !== undefined && parts.size === 1) return { ...unfiled, consumers: new Map() };
  const whole = emptyKeyUsage();
  for (const [consumerId, part] of parts) {
    mergeFiledUsage(whole, part, false);
    if (consumerId !== null) whole.consumers.set(consumerId, part);
  }
  return whole;
}
