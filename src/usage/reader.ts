import type { Db } from '../store/db.js';
import { UsageRepository, type BusiestUsage } from './usage-repository.js';
import { mergeFiledUsage } from './merge-usage.js';
import {
  MAX_ENDPOINTS_PER_KEY,
  OTHER_ENDPOINT,
  addCounts,
  emptyEndpoint,
  subtractCounts,
  type EndpointUsage,
  type FiledUsage,
  type HandOvers,
  type KeyUsage,
  type PendingPart,
  type PendingUsage,
  type UsageCounts,
} from './usage.js';

export interface EndpointView {
  endpoint: string;
  requests: number;
  successful: number;
  failed: number;
  averageResponseTimeMs: number;
  cost: number;
  unsettled: number;
}

export interface CustomerView {
  customerId: string;
  requests: number;
  successful: number;
  failed: number;
}

/**
 * Reads of a snapshot before one is taken as it is though a seal came between its reads: seals come
 * once a second and the reads take milliseconds, so a second attempt all but always holds.
 */
const SNAPSHOT_ATTEMPTS = 5;

/** The customers a key detail lists, most requests first: with 1,000 paths, its body stays under 2 MB. */
export const MAX_LISTED_CUSTOMERS = 1_000;

/** The usage object of the key detail, less `rateLimits` (which the limiter knows). */
export interface UsageView {
  totalRequests: number;
  successfulRequests: number;
  failedRequests: number;
  /** Units charged. */
  cost: number;
  /** Requests whose response reported no units readable: each charged its reservation. */
  unsettled: number;
  endpoints: EndpointView[];
  usageByCustomer: CustomerView[];
  /** The customers beyond those listed, how many and their usage summed; absent when all are listed. */
  usageByCustomerNotListed?: { customers: number; requests: number; successful: number; failed: number };
}

const byRequestsThenName =
  <T extends { requests: number }>(key: (t: T) => string) =>
  (a: T, b: T) =>
    b.requests - a.requests || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

/**
 * Stored totals plus whatever is recorded but not stored yet (Redis, or the embedded sink, and this
 * process), read so that nothing is counted twice or missed while a flush moves usage downstream
 * (process → Redis → store): see `snapshot`.
 */
export class UsageReader {
  constructor(
    private readonly repository: UsageRepository,
    /** Ordered downstream first: Redis (or the embedded sink) before this process's recorder, last. */
    private readonly pendingSources: readonly PendingUsage[],
  ) {}

  /** The key detail's usage: its totals under every consumer it was filed under. */
  async read(keyId: string): Promise<UsageView> {
    const { stored, pending } = await this.snapshot([keyId], (db) =>
      new UsageRepository(db).readBusiest({ keyId }, MAX_LISTED_CUSTOMERS),
    );
    return view(stored, pending);
  }

  /**
   * A consumer's usage: everything its keys did while they belonged to it. `keyIds` are the keys
   * whose pending usage may hold some of it (its keys now); a key moved away within the last second
   * or two shows its part here once it is stored.
   */
  async readConsumer(consumerId: string, keyIds: readonly string[]): Promise<UsageView> {
    const { stored, pending } = await this.snapshot(keyIds, (db) =>
      new UsageRepository(db).readBusiest({ consumerId }, MAX_LISTED_CUSTOMERS),
    );
    return view(
      stored,
      pending.flatMap((usage) => usage.consumers.get(consumerId) ?? []),
    );
  }

  /**
   * `read` of the store, and every pending part of the `keyIds` the store does not hold at that
   * moment, each exactly once however flushes interleave: the downstream sources are read first,
   * then the store together with which of their sealed batches it has applied, in one snapshot (a
   * batch is either in what `read` saw, or among the parts); this process's recorder, the last
   * source, is read after the store. A part with no batch id (a live hash in Redis) may have been
   * sealed and stored between the two reads, and usage the recorder hands downstream meanwhile (or was
   * handing over already) is in neither its read nor theirs: when a source's seal mark moved or a
   * hand-over began or was under way, all is read again.
   */
  async snapshot<T>(
    keyIds: readonly string[],
    read: (snapshot: Db) => Promise<T>,
  ): Promise<{ readonly stored: T; readonly pending: KeyUsage[] }> {
    const downstreamSources = this.pendingSources.slice(0, -1);
    const local = this.pendingSources.at(-1);
    const marks = () => Promise.all(downstreamSources.map((source) => source.sealMark?.()));
    for (let attempt = 1; ; attempt++) {
      const handOversBefore = local?.handOvers?.();
      const before = await marks();
      const downstream: PendingPart[] = [];
      for (const source of downstreamSources) downstream.push(...(await pendingOf(source, keyIds)));
      const { stored, applied } = await this.repository.inSnapshot(batchIdsOf(downstream), read);
      const after = await marks();
      const localParts = local === undefined ? [] : await pendingOf(local, keyIds);
      // A source that does not answer (mark null) shows nothing anyway: reading again only waits on it.
      const moved =
        before.some((mark, i) => mark !== after[i]) ||
        (!after.includes(null) && handedOver(handOversBefore, local?.handOvers?.()));
      if (attempt < SNAPSHOT_ATTEMPTS && moved) continue;
      return {
        stored,
        pending: [...notIn(applied, downstream), ...localParts.map((p) => p.usage)],
      };
    }
  }
}

/** Whether usage may have moved downstream from the recorder during a read: a hand-over began, or one was under way. */
const handedOver = (before: HandOvers | undefined, after: HandOvers | undefined): boolean =>
  before !== undefined &&
  after !== undefined &&
  (before.begun !== after.begun || before.underWay || after.underWay);

const pendingOf = async (source: PendingUsage, keyIds: readonly string[]) =>
  (await Promise.all(keyIds.map((keyId) => source.pending(keyId)))).flat();

/**
 * Stored totals (with their busiest customers) and the pending parts as a detail shows them. Part by
 * part into the stored totals, so the caps count the names the store holds, as the flush will: a
 * pending path the store holds keeps its name even when the parts together pass the cap.
 */
function view({ usage, allCustomers }: BusiestUsage, pending: readonly FiledUsage[]): UsageView {
  // The customers not read are counted and summed. Pending usage of theirs counts with them (until
  // it is stored, it cannot tell whether it is a new customer, so they are not counted again).
  const { count, ...all } = allCustomers;
  const notListed = { customers: count - usage.customers.size, ...all };
  for (const c of usage.customers.values()) subtractCounts(notListed, c);
  const partial = notListed.customers > 0;
  for (const part of pending) {
    if (!partial) {
      mergeFiledUsage(usage, part);
      continue;
    }
    const read = new Map<string, UsageCounts>();
    for (const [name, u] of part.customers) {
      if (usage.customers.has(name)) read.set(name, u);
      else addCounts(notListed, u);
    }
    mergeFiledUsage(usage, { ...part, customers: read });
  }

  const endpoints: EndpointView[] = [];
  let totalRequests = 0;
  let successfulRequests = 0;
  let cost = 0;
  let unsettled = 0;
  for (const [endpoint, u] of listedEndpoints(usage.endpoints)) {
    totalRequests += u.requests;
    successfulRequests += u.successful;
    cost += u.cost;
    unsettled += u.unsettled ?? 0;
    endpoints.push({
      endpoint,
      requests: u.requests,
      successful: u.successful,
      failed: u.failed,
      averageResponseTimeMs: u.requests === 0 ? 0 : Math.round((u.totalDurationMs / u.requests) * 100) / 100,
      cost: u.cost,
      unsettled: u.unsettled ?? 0,
    });
  }
  const customers: CustomerView[] = [...usage.customers]
    .map(([customerId, u]) => ({ customerId, ...u }))
    .sort(byRequestsThenName((c) => c.customerId));
  // Pending customers new to a key with fewer stored can take it past the list too.
  for (const c of customers.slice(MAX_LISTED_CUSTOMERS)) {
    addCounts(notListed, c);
    notListed.customers++;
  }
  return {
    totalRequests,
    successfulRequests,
    failedRequests: totalRequests - successfulRequests,
    cost,
    unsettled,
    endpoints: endpoints.sort(byRequestsThenName((e) => e.endpoint)),
    usageByCustomer: customers.slice(0, MAX_LISTED_CUSTOMERS),
    ...(notListed.customers > 0 && { usageByCustomerNotListed: notListed }),
  };
}

/**
 * A key holds at most 1,000 paths and "(other)"; a consumer, the paths of all its keys: beyond the
 * 1,000 with the most requests, the rest are listed as one "(other)", as a key's would be.
 */
function listedEndpoints(endpoints: Map<string, EndpointUsage>): Map<string, EndpointUsage> {
  if (endpoints.size <= MAX_ENDPOINTS_PER_KEY + 1) return endpoints;
  const named = [...endpoints]
    .filter(([name]) => name !== OTHER_ENDPOINT)
    .sort(([a, x], [b, y]) => y.requests - x.requests || (a < b ? -1 : 1));
  const listed = new Map(named.slice(0, MAX_ENDPOINTS_PER_KEY));
  const other = emptyEndpoint();
  for (const [, u] of named.slice(MAX_ENDPOINTS_PER_KEY)) addCounts(other, u);
  const held = endpoints.get(OTHER_ENDPOINT);
  if (held !== undefined) addCounts(other, held);
  listed.set(OTHER_ENDPOINT, other);
  return listed;
}

const batchIdsOf = (parts: readonly PendingPart[]): string[] =>
  parts.flatMap((p) => (p.batchId === undefined ? [] : [p.batchId]));

/** The usage of the parts whose batch is not among `applied`. */
const notIn = (applied: ReadonlySet<string>, parts: readonly PendingPart[]): KeyUsage[] =>
  parts.flatMap((part) => (part.batchId === undefined || !applied.has(part.batchId) ? [part.usage] : []));
