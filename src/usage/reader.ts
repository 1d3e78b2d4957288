import type { UsageRepository } from './usage-repository.js';
import { emptyKeyUsage, mergeKeyUsage, type KeyUsage, type PendingPart, type PendingUsage } from './usage.js';

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

/** The usage object of the key detail, less `rateLimits` (which the limiter knows). */
export interface UsageView {
  totalRequests: number;
  successfulRequests: number;
  failedRequests: number;
  endpoints: EndpointView[];
  usageByCustomer: CustomerView[];
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
    /** Ordered downstream first: Redis before this process. */
    private readonly pendingSources: readonly PendingUsage[],
  ) {}

  async read(keyId: string): Promise<UsageView> {
    const usage = await this.repository.read(keyId);
    mergeKeyUsage(usage, await this.unflushed(keyId));

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
    const usageByCustomer: CustomerView[] = [...usage.customers].map(([customerId, u]) => ({ customerId, ...u }));
    return {
      totalRequests,
      successfulRequests,
      failedRequests: totalRequests - successfulRequests,
      endpoints: endpoints.sort(byRequestsThenName((e) => e.endpoint)),
      usageByCustomer: usageByCustomer.sort(byRequestsThenName((c) => c.customerId)),
    };
  }

  /**
   * What is recorded for a key and not in Postgres yet. Read it after Postgres (see above): a sealed
   * batch Postgres applied meanwhile is left out by its batch id.
   */
  async unflushed(keyId: string): Promise<KeyUsage> {
    const parts: PendingPart[] = [];
    for (const source of this.pendingSources) parts.push(...(await source.pending(keyId)));
    const sealed = parts.flatMap((p) => (p.batchId === undefined ? [] : [p.batchId]));
    const applied = await this.repository.appliedBatches(sealed);
    const usage = emptyKeyUsage();
    for (const part of parts) if (part.batchId === undefined || !applied.has(part.batchId)) mergeKeyUsage(usage, part.usage);
    return usage;
  }
}
