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

/** Where the recorder sends each batch: Postgres directly (single node) or Redis hashes (replicas). */
export interface UsageSink {
  /**
   * Resolves once the batch is durable. Rejects on failure, for the caller to retry: with a
   * `PartialUsageWrite` when part of the batch is durable (its `unwritten` is the rest), otherwise
   * with nothing of the batch kept.
   */
  write(batch: UsageBatch): Promise<void>;
}

/** A sink wrote a batch in parts and a later part failed: `unwritten` is what is not durable. */
export class PartialUsageWrite extends Error {
  constructor(
    readonly unwritten: UsageBatch,
    cause: unknown,
  ) {
    super(`usage written in part; ${unwritten.size} keys not written: ${(cause as Error).message}`, { cause });
    this.name = 'PartialUsageWrite';
  }
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

export function mergeBatch(into: UsageBatch, from: UsageBatch): void {
  for (const [keyId, usage] of from) {
    let target = into.get(keyId);
    if (!target) into.set(keyId, (target = emptyKeyUsage()));
    mergeKeyUsage(target, usage);
  }
}
