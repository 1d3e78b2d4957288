/** Usage figures, aggregated in memory and added to the stored totals in batches. */
import { emptyFailureLog, type FailedLimit, type FailureLog } from './failure-log.js';
import { addToBin, mergeHistogram, subtractHistogram, type LatencyHistogram } from './latency-histogram.js';

/**
 * What the client got, by class (docs/guides/usage-and-billing.md, docs/decisions/0026). A WebSocket upgrade's 101 counts with 2xx (it
 * is its success), a client that left before its answer (499) with 4xx: every request in one class.
 */
export const STATUS_FIELDS = ['status2xx', 'status3xx', 'status4xx', 'status5xx'] as const;
export type StatusField = (typeof STATUS_FIELDS)[number];

/**
 * Why a request failed (docs/decisions/0026), at most one per request: `rateLimited` (the limiter's
 * 429), `backendError` (the backend answered 5xx), `backendUnreachable` (Tollgate answered 502 or 504).
 */
export const OUTCOMES = [
  'rateLimited',
  'creditsExhausted',
  'concurrencyLimited',
  'disabled',
  'expired',
  'routeNotAllowed',
  'originNotAllowed',
  'addressNotAllowed',
  'backendError',
  'backendUnreachable',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** One finished request of a valid key, as the proxy knows it: what usage counts (decision record 0026). */
export interface RequestFacts {
  readonly keyId: string;
  /** The consumer the key belonged to when the request was made: its usage is filed there for good. */
  readonly consumerId: string | null;
  /** Request path without the query. */
  readonly endpoint: string;
  /** The route it took: its id, or null for the catch-all (`UPSTREAM_URL`) and for no route at all. */
  readonly routeId: string | null;
  /** The CUSTOMER_ID_HEADER value, if sent. */
  readonly customerId: string | undefined;
  /** What the client got (499: it left first); successful below 400. */
  readonly status: number;
  readonly outcome: Outcome | undefined;
  /** Units charged: 0 for a refused request. */
  readonly cost: number;
  /**
   * Its response reported no units readable by its plan's `settle` (src/proxy/settlement.ts): its cost
   * is its reservation. Absent: it settled, or had nothing to settle.
   */
  readonly unsettled?: boolean;
  /** Request received to response finished. */
  readonly durationMs: number;
  /** When it arrived, epoch ms: its minute and day of usage over time. */
  readonly atMs: number;
  /** For the failure log, when the request failed (status 400 and above). */
  readonly failure?: FailureFacts;
  /**
   * Cost added to a request counted before (Envoy's call when a stream is done): its cost and
   * nothing else, not a request, no status or latency.
   */
  readonly costOnly?: boolean;
}

/** What the failure log keeps of a failed request beyond what usage counts (src/usage/failure-log.ts). */
export interface FailureFacts {
  readonly requestId: string;
  readonly method: string;
  readonly code: string;
  readonly limit: FailedLimit | null;
  readonly clientAddress: string | null;
}

export interface UsageCounts {
  requests: number;
  successful: number;
  failed: number;
}

export interface EndpointUsage extends UsageCounts {
  /** Sum of response times, so averages stay exact when batches add up. */
  totalDurationMs: number;
  /** Units charged. */
  cost: number;
  /**
   * Requests whose response reported no units readable: each charged its reservation. Kept once there
   * is one (absent: 0), so usage without any, and usage counted before it was kept, is as it was.
   */
  unsettled?: number;
}

/**
 * One bucket of usage over time: `rateLimited` (the limiter's 429s, the first outcome) is part of
 * `failed`; the status classes add up to `requests`; `latency` holds every request's response time.
 */
export interface BucketCounts extends EndpointUsage, Record<StatusField, number>, Record<Outcome, number> {
  readonly latency: LatencyHistogram;
}

/** One UTC day of a key's usage by endpoint, by customer and by route: the source of their series. */
export interface DayUsage {
  readonly endpoints: Map<string, BucketCounts>;
  readonly customers: Map<string, BucketCounts>;
  /**
   * By route id (`NO_ROUTE_ID` for the catch-all or no route). Routes have no totals: a request
   * counted by an earlier version has no route, and is in no route's series (decision record 0035).
   */
  readonly routes: Map<string, BucketCounts>;
}

/**
 * What a key did under one filing. `endpoints` and `customers` are its totals; `days` holds the same
 * requests by the UTC day they arrived in, under the same names. A part of the totals may lack its
 * day (usage from a replica or journal of an earlier version): `undatedUsage` tells which, and it is
 * filed under the day it is applied.
 */
export interface FiledUsage {
  readonly endpoints: Map<string, EndpointUsage>;
  readonly customers: Map<string, UsageCounts>;
  /** Start of each UTC minute (epoch ms) → what the key did in it: the source of usage over time. */
  readonly minutes: Map<number, BucketCounts>;
  /** Start of each UTC day (epoch ms) → its endpoints, customers and routes. */
  readonly days: Map<number, DayUsage>;
}

/**
 * What a key did: all of it, and the part of it filed under each consumer it belonged to meanwhile
 * (consumer id → its part, under the names the whole counts them by). The rest, the whole less the
 * parts, is filed under no consumer (src/usage/filings.ts). The whole comes first so that a version
 * that knows no consumers, reading only it, still counts every request (decision record 0026).
 */
export interface KeyUsage extends FiledUsage {
  readonly consumers: Map<string, FiledUsage>;
  /** The key's failed requests, for the failure log: with the whole only, each entry names its consumer. */
  readonly failures?: FailureLog;
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
/**
 * Route ids a key's series hold per day and per month, the rest under "(other)": routes are an
 * administrator's, and few, but ids deleted and created anew would otherwise add up for ever.
 */
export const MAX_ROUTES_PER_KEY = 1000;
/**
 * The name usage files a request of no route under (the catch-all, or none: 404 `route_not_found`),
 * `routeId: null` in the API. Empty, so it is no route id, and a key column holds it (not null).
 */
export const NO_ROUTE_ID = '';

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
export function requestsOf(usage: FiledUsage): number {
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
  /**
   * For a source whose parts may lack a `batchId` (Redis' live hashes): a mark that changes whenever
   * such a part is sealed into a batch, so the reader knows to read again when one was sealed (and
   * perhaps stored) between its read of this source and its read of Postgres.
   */
  sealMark?(): Promise<unknown>;
  /**
   * For this process's recorder, the source read last: its hand-overs to the sink. Usage handed over
   * between the reader's read of the sources downstream and its read of this one, or on its way
   * downstream across the first, is in neither read: the reader reads again.
   */
  handOvers?(): HandOvers;
}

/** A recorder's hand-overs of usage to its sink. */
export interface HandOvers {
  /** How many have begun. */
  readonly begun: number;
  /**
   * One is being written. (A push the sink could not confirm and holds for the next write may be in
   * Redis or not: neither read shows it until it is written again.)
   */
  readonly underWay: boolean;
}

export const emptyFiledUsage = (): FiledUsage => ({
  endpoints: new Map(),
  customers: new Map(),
  minutes: new Map(),
  days: new Map(),
});

export const emptyKeyUsage = (): KeyUsage => ({ ...emptyFiledUsage(), consumers: new Map() });

/** The failure log a key's usage carries, created when absent. */
export function failuresOf(usage: KeyUsage): FailureLog {
  if (usage.failures === undefined) (usage as { failures?: FailureLog }).failures = emptyFailureLog();
  return usage.failures!;
}

export const emptyDay = (): DayUsage => ({ endpoints: new Map(), customers: new Map(), routes: new Map() });

/**
 * The name under which `entries` counts `name`: its own while it is held or fewer than `max` names
 * are held, else "(other)". The one place the per-key caps are applied, by the recorder, by merges
 * and by the store (which passes the names it already holds).
 */
export function countedName<K>(
  entries: { has(name: K): boolean; readonly size: number },
  name: K,
  max: number,
  held = entries.size,
): K {
  return entries.has(name) || held < max ? name : (OTHER_ENDPOINT as K);
}

/** The entry of `entries` that counts `name` (see `countedName`), created when absent. */
export function entryFor<K, T>(
  entries: Map<K, T>,
  name: K,
  max: number,
  create: () => T,
  held = entries.size,
): T {
  return entryOf(entries, countedName(entries, name, max, held), create);
}

/** The entry of `entries` named `name`, created when absent. */
export function entryOf<K, T>(entries: Map<K, T>, name: K, create: () => T): T {
  let entry = entries.get(name);
  if (entry === undefined) entries.set(name, (entry = create()));
  return entry;
}

export const emptyCounts = (): UsageCounts => ({ requests: 0, successful: 0, failed: 0 });
export const emptyEndpoint = (): EndpointUsage => ({
  requests: 0,
  successful: 0,
  failed: 0,
  totalDurationMs: 0,
  cost: 0,
});
export const emptyBucket = (): BucketCounts => ({
  requests: 0,
  successful: 0,
  failed: 0,
  totalDurationMs: 0,
  cost: 0,
  status2xx: 0,
  status3xx: 0,
  status4xx: 0,
  status5xx: 0,
  rateLimited: 0,
  creditsExhausted: 0,
  concurrencyLimited: 0,
  disabled: 0,
  expired: 0,
  routeNotAllowed: 0,
  originNotAllowed: 0,
  addressNotAllowed: 0,
  backendError: 0,
  backendUnreachable: 0,
  latency: new Map(),
});

/** Counts of any shape: a customer's, an endpoint's or a bucket's. */
export type Counted = UsageCounts & Partial<Omit<BucketCounts, keyof UsageCounts>>;
/** Every number a bucket adds up; an entry of another shape has some of them. */
const MEASURES = [
  'requests',
  'successful',
  'failed',
  'totalDurationMs',
  'cost',
  ...STATUS_FIELDS,
  ...OUTCOMES,
] as const;

/** Adds `from` to `into`: every measure `into` has (absent in `from`: 0), `unsettled`, and the response times. */
export function addCounts(into: Counted, from: Counted): void {
  for (const m of MEASURES) if (m in into) (into as unknown as Record<string, number>)[m]! += from[m] ?? 0;
  if (from.unsettled) into.unsettled = (into.unsettled ?? 0) + from.unsettled;
  if (into.latency !== undefined && from.latency !== undefined) mergeHistogram(into.latency, from.latency);
}

/** Takes `part` (a part of `from`'s usage) out of `from`. */
export function subtractCounts(from: Counted, part: Counted): void {
  for (const m of MEASURES) if (m in from) (from as unknown as Record<string, number>)[m]! -= part[m] ?? 0;
  if (part.unsettled) from.unsettled = (from.unsettled ?? 0) - part.unsettled;
  if (from.latency !== undefined && part.latency !== undefined) subtractHistogram(from.latency, part.latency);
}

/** One request into a customer's totals. */
export function countRequest(counts: UsageCounts, facts: RequestFacts): void {
  if (facts.costOnly === true) return;
  counts.requests++;
  if (facts.status < 400) counts.successful++;
  else counts.failed++;
}

/** One request into an endpoint's totals: also its response time, cost and whether it settled. */
export function countEndpointRequest(endpoint: EndpointUsage, facts: RequestFacts): void {
  countRequest(endpoint, facts);
  endpoint.totalDurationMs += facts.durationMs;
  endpoint.cost += facts.cost;
  if (facts.unsettled === true) endpoint.unsettled = (endpoint.unsettled ?? 0) + 1;
}

/** One request into a bucket: also its status class, outcome and latency bin (`binOf`, worked out once per request). */
export function countBucketRequest(bucket: BucketCounts, facts: RequestFacts, bin: number): void {
  countEndpointRequest(bucket, facts);
  if (facts.costOnly === true) return;
  const status = facts.status;
  if (status < 300) bucket.status2xx++;
  else if (status < 400) bucket.status3xx++;
  else if (status < 500) bucket.status4xx++;
  else bucket.status5xx++;
  if (facts.outcome !== undefined) bucket[facts.outcome]++;
  addToBin(bucket.latency, bin);
}

/** The UTC minute (epoch ms) an instant falls in. */
export const minuteOf = (atMs: number): number => atMs - (atMs % 60_000);
/** The UTC day (epoch ms) an instant falls in. */
export const dayOf = (atMs: number): number => atMs - (atMs % 86_400_000);
