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

export interface KeyUsage {
  readonly endpoints: Map<string, EndpointUsage>;
  readonly customers: Map<string, UsageCounts>;
}

/** keyId → what that key did since the previous batch. */
export type UsageBatch = Map<string, KeyUsage>;

/** The bucket for paths beyond the per-key cap. */
export const OTHER_ENDPOINT = '(other)';
export const MAX_ENDPOINTS_PER_KEY = 1000;
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
  return { endpoints: new Map(), customers: new Map() };
}

/** Adds `from` into `into`, capping distinct endpoints like the store does. */
export function mergeKeyUsage(into: KeyUsage, from: KeyUsage): void {
  for (const [endpoint, u] of from.endpoints) {
    const name = into.endpoints.has(endpoint) || into.endpoints.size < MAX_ENDPOINTS_PER_KEY ? endpoint : OTHER_ENDPOINT;
    const t = into.endpoints.get(name);
    if (t) {
      t.requests += u.requests;
      t.successful += u.successful;
      t.failed += u.failed;
      t.totalDurationMs += u.totalDurationMs;
    } else into.endpoints.set(name, { ...u });
  }
  for (const [customer, u] of from.customers) {
    const t = into.customers.get(customer);
    if (t) {
      t.requests += u.requests;
      t.successful += u.successful;
      t.failed += u.failed;
    } else into.customers.set(customer, { ...u });
  }
}
