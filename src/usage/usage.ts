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

/** One UTC day of a key's usage by endpoint and by customer: the source of their series. */
export interface DayUsage {
  readonly endpoints: Map<string, BucketCounts>;
  readonly customers: Map<string, BucketCounts>;
}

/**
 * What a key did. `endpoints` and `customers` are its totals; `days` holds the same requests by the
 * UTC day they arrived in, under the same names. A part of the totals may lack its day (usage from a
 * replica or journal of an earlier version): `undatedUsage` tells which, and it is filed under the
 * day it is applied.
 */
export interface KeyUsage {
  readonly endpoints: Map<string, EndpointUsage>;
  readonly customers: Map<string, UsageCounts>;
  /** Start of each UTC minute (epoch ms) → what the key did in it: the source of usage over time. */
  readonly minutes: Map<number, BucketCounts>;
  /** Start of each UTC day (epoch ms) → its endpoints and customers. */
  readonly days: Map<number, DayUsage>;
}

/** keyId → what that key did since the previous batch. */
export type UsageBatch = Map<string, KeyUsage>;

/** The entry that counts paths, or customers, beyond the per-key cap. */
export const OTHER_ENDPOINT = '(other)';
export const MAX_ENDPOINTS_PER_KEY = 1000;
/** One key sending a new customer id per request must not grow its usage without bound. */
export const MAX_CUSTOMERS_PER_KEY = 10_000;
/**
 * Longer paths are cut: a btree index entry (key id, endpoint) must stay under ~2.7 kB, and the key
 * detail, which lists every path, under 2 MB (decision record 0012).
 */
export const MAX_ENDPOINT_LENGTH = 512;
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

/** Requests in a key's usage: every request counts in exactly one of its endpoints. */
export function requestsOf(usage: KeyUsage): number {
  let n = 0;
  for (const e of usage.endpoints.values()) n += e.requests;
  return n;
}

/** Requests in a batch. */
export function requestsIn(batch: UsageBatch): number {
  let n = 0;
  for (const usage of batch.values()) n += requestsOf(usage);
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
  return { endpoints: new Map(), customers: new Map(), minutes: new Map(), days: new Map() };
}

export const emptyDay = (): DayUsage => ({ endpoints: new Map(), customers: new Map() });

/**
 * The name under which `entries` counts `name`: its own while it is held or fewer than `max` names
 * are held, else "(other)". The one place the per-key caps are applied, by the recorder, by merges
 * and by the store (which passes the names it already holds).
 */
export function countedName<K>(entries: { has(name: K): boolean; readonly size: number }, name: K, max: number, held = entries.size): K {
  return entries.has(name) || held < max ? name : (OTHER_ENDPOINT as K);
}

/** The entry of `entries` that counts `name` (see `countedName`), created when absent. */
export function entryFor<K, T>(entries: Map<K, T>, name: K, max: number, create: () => T, held = entries.size): T {
  return entryOf(entries, countedName(entries, name, max, held), create);
}

/** The entry of `entries` named `name`, created when absent. */
export function entryOf<K, T>(entries: Map<K, T>, name: K, create: () => T): T {
  let entry = entries.get(name);
  if (entry === undefined) entries.set(name, (entry = create()));
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

/** Takes the counts of `part` (a part of `from`'s usage) out of `from`. */
export function subtractCounts(from: UsageCounts, part: UsageCounts): void {
  from.requests -= part.requests;
  from.successful -= part.successful;
  from.failed -= part.failed;
}

/** One request into `counts`: its outcome, its response time and whether the limiter refused it. */
export function countRequest(counts: UsageCounts & { totalDurationMs?: number; rateLimited?: number }, ok: boolean, durationMs: number, rateLimited: boolean): void {
  counts.requests++;
  if (ok) counts.successful++;
  else counts.failed++;
  if (counts.totalDurationMs !== undefined) counts.totalDurationMs += durationMs;
  if (rateLimited && counts.rateLimited !== undefined) counts.rateLimited++;
}

/** The UTC minute (epoch ms) an instant falls in. */
export const minuteOf = (atMs: number): number => atMs - (atMs % 60_000);
/** The UTC day (epoch ms) an instant falls in. */
export const dayOf = (atMs: number): number => atMs - (atMs % 86_400_000);

/**
 * Adds `from` into `into`. `capped`: distinct endpoints and customers are capped as the recorder and
 * the store cap them, a day's names folding as the totals' do (the detail view). Not capped: every
 * name is kept, for usage on its way to the store, which applies the caps itself.
 */
export function mergeKeyUsage(into: KeyUsage, from: KeyUsage, capped = true): void {
  const endpointCap = capped ? MAX_ENDPOINTS_PER_KEY : Infinity;
  const customerCap = capped ? MAX_CUSTOMERS_PER_KEY : Infinity;
  for (const [endpoint, u] of from.endpoints) addCounts(entryFor(into.endpoints, endpoint, endpointCap, emptyEndpoint), u);
  for (const [customer, u] of from.customers) addCounts(entryFor(into.customers, customer, customerCap, emptyCounts), u);
  for (const [minute, u] of from.minutes) addCounts(entryOf(into.minutes, minute, emptyBucket), u);
  for (const [day, d] of from.days) {
    const target = entryOf(into.days, day, emptyDay);
    // Every name of a day is in the totals merged above: a name they fold into "(other)" folds here too.
    for (const [endpoint, u] of d.endpoints) addCounts(entryOf(target.endpoints, countedName(into.endpoints, endpoint, 0), emptyBucket), u);
    for (const [customer, u] of d.customers) addCounts(entryOf(target.customers, countedName(into.customers, customer, 0), emptyBucket), u);
  }
}

/** `a` less `b`, or undefined when nothing is left (never below zero). */
function remainder(a: UsageCounts & { totalDurationMs?: number }, b: BucketCounts | undefined): BucketCounts | undefined {
  const requests = a.requests - (b?.requests ?? 0);
  if (requests <= 0) return undefined;
  return {
    requests,
    successful: Math.max(0, a.successful - (b?.successful ?? 0)),
    failed: Math.max(0, a.failed - (b?.failed ?? 0)),
    rateLimited: 0,
    totalDurationMs: Math.max(0, (a.totalDurationMs ?? 0) - (b?.totalDurationMs ?? 0)),
  };
}

/** A key's totals by name that `days` does not account for: usage recorded without its day. */
export function undatedUsage(usage: KeyUsage): DayUsage {
  const dated = emptyDay();
  for (const d of usage.days.values()) {
    for (const [endpoint, u] of d.endpoints) addCounts(entryOf(dated.endpoints, endpoint, emptyBucket), u);
    for (const [customer, u] of d.customers) addCounts(entryOf(dated.customers, customer, emptyBucket), u);
  }
  const undated = emptyDay();
  for (const [endpoint, u] of usage.endpoints) {
    const rest = remainder(u, dated.endpoints.get(endpoint));
    if (rest) undated.endpoints.set(endpoint, rest);
  }
  for (const [customer, u] of usage.customers) {
    const rest = remainder(u, dated.customers.get(customer));
    if (rest) undated.customers.set(customer, rest);
  }
  return undated;
}
