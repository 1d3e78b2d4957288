/** Usage figures, aggregated in memory and added to the stored totals in batches. */

export interface UsageCounts {
  requests: number;
  successful: number;
  failed: number;
}

export interface EndpointUsage extends UsageCounts {
  /** Sum of response times, so averages stay exact when batches add up. */
  totalDurationMs: number;
}

/** One bucket of usage over time: `rateLimited` (the limiter's 429s) is part of `failed`. */
export interface BucketCounts extends EndpointUsage {
  rateLimited: number;
}

export interface KeyUsage {
  readonly endpoints: Map<string, EndpointUsage>;
  readonly customers: Map<string, UsageCounts>;
  /** Start of each UTC minute (epoch ms) → what the key did in it: the source of usage over time. */
  readonly minutes: Map<number, BucketCounts>;
}

/** keyId → what that key did since the previous batch. */
export type UsageBatch = Map<string, KeyUsage>;

/** The entry that counts paths, or customers, beyond the per-key cap. */
export const OTHER_ENDPOINT = '(other)';
export const MAX_ENDPOINTS_PER_KEY = 1000;
/** One key sending a new customer id per request must not grow its usage without bound. */
export const MAX_CUSTOMERS_PER_KEY = 10_000;
/** Longer paths are cut: a btree index entry (key id, endpoint) must stay under ~2.7 kB. */
export const MAX_ENDPOINT_LENGTH = 1024;
/** Longer `CUSTOMER_ID_HEADER` values are cut to this many characters. */
export const MAX_CUSTOMER_ID_LENGTH = 200;

/**
 * Where the recorder hands each batch: Postgres directly (single node) or Redis hashes (replicas).
 *
 * Exactly once: a batch handed over is the sink's from then on, under one identity given at hand-over
 * (a batch id, push markers) that every retry, timeout and restart keeps, and the store applies each
 * identity once. A write whose answer is lost is therefore sent again as the same write, never as new
 * usage under a new identity while the old one may still run.
 */
export interface UsageSink {
  /**
   * Takes `batch` (possibly empty) and writes, in order, everything handed over and not yet durable.
   * Resolves once all of it is durable; rejects while some is not: the sink keeps that part and writes
   * it again, under the same identity, on the next call.
   */
  write(batch: UsageBatch): Promise<void>;
  /** Requests handed over and not yet known to be durable. */
  heldRequests(): number;
  /**
   * At exit, keeps what is still held where the next start finds it (a journal under DATA_DIR);
   * returns the requests it could not keep. Absent: nothing outlives the process.
   */
  preserve?(): number;
}

/** Requests in a batch: every request counts in exactly one endpoint of its key. */
export function requestsIn(batch: UsageBatch): number {
  let n = 0;
  for (const usage of batch.values()) for (const e of usage.endpoints.values()) n += e.requests;
  return n;
}

/** Part of a key's pending usage; `batchId` names a sealed batch on its way into Postgres. */
export interface PendingPart {
  readonly usage: KeyUsage;
  readonly batchId?: string;
}

/**
 * Usage recorded but not yet in Postgres (in Redis, or still in this process), for the detail view.
 * A part must never also be in Postgres at the moment it is read, except a sealed batch, which says
 * so with its `batchId`: the reader then asks Postgres whether that batch has landed.
 */
export interface PendingUsage {
  pending(keyId: string): Promise<PendingPart[]>;
}

export function emptyKeyUsage(): KeyUsage {
  return { endpoints: new Map(), customers: new Map(), minutes: new Map() };
}

/**
 * The entry of `entries` that counts `name`: its own while fewer than `max` names are held, else the
 * one "(other)" entry. The one place the per-key caps are applied, by the recorder, by merges and by
 * the store (which passes the names it already holds).
 */
export function entryFor<K, T>(entries: Map<K, T>, name: K, max: number, create: () => T, held = entries.size): T {
  let entry = entries.get(name);
  if (entry === undefined) {
    const counted = held < max ? name : (OTHER_ENDPOINT as K);
    entry = entries.get(counted);
    if (entry === undefined) entries.set(counted, (entry = create()));
  }
  return entry;
}

export const emptyCounts = (): UsageCounts => ({ requests: 0, successful: 0, failed: 0 });
export const emptyEndpoint = (): EndpointUsage => ({ requests: 0, successful: 0, failed: 0, totalDurationMs: 0 });
export const emptyBucket = (): BucketCounts => ({ requests: 0, successful: 0, failed: 0, rateLimited: 0, totalDurationMs: 0 });

/** Adds counts (and summed response times and 429s, when both have them) of `from` to `into`. */
export function addCounts(
  into: UsageCounts & { totalDurationMs?: number; rateLimited?: number },
  from: UsageCounts & { totalDurationMs?: number; rateLimited?: number },
): void {
  into.requests += from.requests;
  into.successful += from.successful;
  into.failed += from.failed;
  if (into.totalDurationMs !== undefined) into.totalDurationMs += from.totalDurationMs ?? 0;
  if (into.rateLimited !== undefined) into.rateLimited += from.rateLimited ?? 0;
}

/** The UTC minute (epoch ms) an instant falls in. */
export const minuteOf = (atMs: number): number => atMs - (atMs % 60_000);

/** Adds `from` into `into`, capping distinct endpoints and customers like the recorder and the store do. */
export function mergeKeyUsage(into: KeyUsage, from: KeyUsage): void {
  for (const [endpoint, u] of from.endpoints) addCounts(entryFor(into.endpoints, endpoint, MAX_ENDPOINTS_PER_KEY, emptyEndpoint), u);
  for (const [customer, u] of from.customers) addCounts(entryFor(into.customers, customer, MAX_CUSTOMERS_PER_KEY, emptyCounts), u);
  for (const [minute, u] of from.minutes) addCounts(entryFor(into.minutes, minute, Infinity, emptyBucket), u);
}
