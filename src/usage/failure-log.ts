/**
 * The failure log: which of a key's requests failed, when and why (docs/guides/failures.md). Entries
 * are recorded beside the usage counts (recorder.ts) and travel in the same batches, so a batch
 * applied once applies its entries once (docs/decisions/0084-failure-log.md).
 */
import type { Per } from '../plans/plan.js';

/** The refusing limit of a 429 `rate_limit_exceeded` or `concurrency_limit_exceeded`. */
export interface FailedLimit {
  readonly name: string;
  /** Null for a concurrency limit. */
  readonly period: string | null;
  readonly scope: string;
  readonly limit: number;
  /** Whom it counts (`key`, `clientAddress`, `customer`); absent on entries recorded before it was kept. */
  readonly per?: Per;
}

/**
 * What the log keeps of one failed request: never a secret, a header value or a query string, only
 * the facts the proxy decided on.
 */
export interface FailureEntry {
  /** Epoch ms the request arrived. */
  readonly atMs: number;
  /** The `x-request-id` the client got. */
  readonly requestId: string;
  readonly consumerId: string | null;
  readonly method: string;
  /** Without the query. */
  readonly path: string;
  readonly routeId: string | null;
  readonly status: number;
  /** The refusal's code, or `backend_error`, `backend_unreachable`, `gateway_timeout`, `client_closed`. */
  readonly code: string;
  readonly limit: FailedLimit | null;
  readonly clientAddress: string | null;
  readonly customerId: string | null;
  readonly durationMs: number;
}

/** A key's failures since the last hand-over: the entries kept, and those left out by minute and code. */
export interface FailureLog {
  readonly entries: FailureEntry[];
  /** `leftOutKey(minute, consumerId, code)` → failures not kept. */
  readonly leftOut: Map<string, number>;
}

/** At most this many entries are kept per key per minute; the rest are counted as left out. */
export const MAX_FAILURES_PER_KEY_MINUTE = 100;
/** Longest request id, path, customer id or address an entry keeps (each is cut beyond). */
const MAX_TEXT = 512;

export const emptyFailureLog = (): FailureLog => ({ entries: [], leftOut: new Map() });

/** The name of a left-out count: the minute (epoch ms), the consumer (empty: none) and the code. */
export const leftOutKey = (minuteMs: number, consumerId: string | null, code: string): string =>
  `${minuteMs}|${consumerId ?? ''}|${code}`;

/** The parts of a left-out count's name, or undefined for a name `leftOutKey` did not make. */
export function parseLeftOutKey(
  name: string,
): { minuteMs: number; consumerId: string | null; code: string } | undefined {
  const first = name.indexOf('|');
  const last = name.lastIndexOf('|');
  const minuteMs = Number(name.slice(0, first));
  if (first <= 0 || last <= first || !Number.isSafeInteger(minuteMs)) return undefined;
  const consumer = name.slice(first + 1, last);
  return { minuteMs, consumerId: consumer === '' ? null : consumer, code: name.slice(last + 1) };
}

/** `from` added to `into`: its entries after those of `into`, its left-out counts added. */
export function mergeFailureLog(into: FailureLog, from: FailureLog): void {
  for (const entry of from.entries) into.entries.push(entry);
  for (const [name, n] of from.leftOut) into.leftOut.set(name, (into.leftOut.get(name) ?? 0) + n);
}

/** A text field as an entry keeps it: cut to a bounded length. */
export const cutText = (text: string): string => (text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text);

/** An entry as JSON text (Redis carries each as one hash value), and back; undefined if it is not one. */
export const encodeEntry = (entry: FailureEntry): string => JSON.stringify(entry);

export function decodeEntry(text: string): FailureEntry | undefined {
  try {
    const entry = JSON.parse(text) as FailureEntry;
    return typeof entry === 'object' && entry !== null && typeof entry.atMs === 'number' ? entry : undefined;
  } catch {
    return undefined;
  }
}
