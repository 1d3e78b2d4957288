import type { UsageRepository } from './usage-repository.js';
import { addCounts, emptyKeyUsage, mergeKeyUsage, subtractCounts, type KeyUsage, type PendingPart, type PendingUsage, type UsageCounts } from './usage.js';

export interface EndpointView {
  endpoint: string;
  requests: number;
  successful: number;
  failed: number;
  averageResponseTimeMs: number;
}

export interface CustomerView {
  customerId: string;
  requests: number;
  successful: number;
  failed: number;
}

/** The customers a key detail lists, most requests first: with 1,000 paths, its body stays under 2 MB. */
export const MAX_LISTED_CUSTOMERS = 1_000;

/** The usage object of the key detail, less `rateLimits` (which the limiter knows). */
export interface UsageView {
  totalRequests: number;
  successfulRequests: number;
  failedRequests: number;
  endpoints: EndpointView[];
  usageByCustomer: CustomerView[];
  /** The customers beyond those listed, how many and their usage summed; absent when all are listed. */
  usageByCustomerNotListed?: { customers: number; requests: number; successful: number; failed: number };
}

const byRequestsThenName = <T extends { requests: number }>(key: (t: T) => string) => (a: T, b: T) =>
  b.requests - a.requests || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

/**
 * Postgres totals plus whatever is recorded but not flushed yet (Redis, this process).
 *
 * Usage only moves downstream (process → Redis → Postgres), so the stores are read downstream first:
 * a request that moves between two reads is then missed by both (for the moment of one write) rather
 * than counted by both. The one overlap left, a sealed Redis batch that Postgres applied before its
 * removal from Redis, is settled by its batch id.
 */
export class UsageReader {
  constructor(
    private readonly repository: UsageRepository,
    /** Ordered downstream first: Redis (or the embedded sink) before this process's recorder, last. */
    private readonly pendingSources: readonly PendingUsage[],
  ) {}

  /**
   * The key detail's usage. Unlike `unflushed`, it misses nothing a flush moves from Redis (or the
   * embedded sink) to the store meanwhile: those sources are read first, then the totals together
   * with which of their batches the store has applied, in one snapshot; this process's recorder, the
   * last source, is read after the store (its usage has not moved downstream yet, or is read there).
   */
  async read(keyId: string): Promise<UsageView> {
    const downstream: PendingPart[] = [];
    for (const source of this.pendingSources.slice(0, -1)) downstream.push(...(await source.pending(keyId)));
    const { usage, allCustomers, applied } = await this.repository.readBusiestWithApplied(keyId, MAX_LISTED_CUSTOMERS, batchIdsOf(downstream));
    const local = this.pendingSources.at(-1);
    const pending = [...notIn(applied, downstream), ...(local === undefined ? [] : await local.pending(keyId)).map((p) => p.usage)];
    // The customers not read are counted and summed. Pending usage of theirs counts with them (until
    // it is stored, it cannot tell whether it is a new customer, so they are not counted again).
    const { count, ...all } = allCustomers;
    const notListed = { customers: count - usage.customers.size, ...all };
    for (const c of usage.customers.values()) subtractCounts(notListed, c);
    const partial = notListed.customers > 0;
    // Part by part into the stored totals, so the caps count the names Postgres holds, as the
    // flush will: a pending path Postgres holds keeps its name even when the parts together
    // pass the cap.
    for (const part of pending) {
      if (!partial) {
        mergeKeyUsage(usage, part);
        continue;
      }
      const read = new Map<string, UsageCounts>();
      for (const [name, u] of part.customers) {
        if (usage.customers.has(name)) read.set(name, u);
        else addCounts(notListed, u);
      }
      mergeKeyUsage(usage, { ...part, customers: read });
    }

    const endpoints: EndpointView[] = [];
    let totalRequests = 0;
    let successfulRequests = 0;
    for (const [endpoint, u] of usage.endpoints) {
      totalRequests += u.requests;
      successfulRequests += u.successful;
      endpoints.push({
        endpoint,
        requests: u.requests,
        successful: u.successful,
        failed: u.failed,
        averageResponseTimeMs: u.requests === 0 ? 0 : Math.round((u.totalDurationMs / u.requests) * 100) / 100,
      });
    }
    const customers: CustomerView[] = [...usage.customers].map(([customerId, u]) => ({ customerId, ...u })).sort(byRequestsThenName((c) => c.customerId));
    // Pending customers new to a key with fewer stored can take it past the list too.
    for (const c of customers.slice(MAX_LISTED_CUSTOMERS)) {
      addCounts(notListed, c);
      notListed.customers++;
    }
    return {
      totalRequests,
      successfulRequests,
      failedRequests: totalRequests - successfulRequests,
      endpoints: endpoints.sort(byRequestsThenName((e) => e.endpoint)),
      usageByCustomer: customers.slice(0, MAX_LISTED_CUSTOMERS),
      ...(notListed.customers > 0 && { usageByCustomerNotListed: notListed }),
    };
  }

  /**
   * What is recorded for a key and not in Postgres yet. Read it after Postgres (see above): a sealed
   * batch Postgres applied meanwhile is left out by its batch id.
   */
  async unflushed(keyId: string): Promise<KeyUsage> {
    const usage = emptyKeyUsage();
    for (const part of await this.unflushedParts(keyId)) mergeKeyUsage(usage, part);
    return usage;
  }

  /** The pending parts of a key, less sealed batches Postgres has applied meanwhile. */
  private async unflushedParts(keyId: string): Promise<KeyUsage[]> {
    const parts: PendingPart[] = [];
    for (const source of this.pendingSources) parts.push(...(await source.pending(keyId)));
    return notIn(await this.repository.appliedBatches(batchIdsOf(parts)), parts);
  }
}

const batchIdsOf = (parts: readonly PendingPart[]): string[] => parts.flatMap((p) => (p.batchId === undefined ? [] : [p.batchId]));

/** The usage of the parts whose batch is not among `applied`. */
const notIn = (applied: ReadonlySet<string>, parts: readonly PendingPart[]): KeyUsage[] =>
  parts.flatMap((part) => (part.batchId === undefined || !applied.has(part.batchId) ? [part.usage] : []));
