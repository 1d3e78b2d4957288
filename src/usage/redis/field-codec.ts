import { randomBytes } from 'node:crypto';
import { decodeEntry, encodeEntry } from '../failure-log.js';
import { addBinText } from '../latency-histogram.js';
import {
  emptyBucket,
  emptyCounts,
  emptyDay,
  emptyEndpoint,
  emptyFiledUsage,
  emptyKeyUsage,
  entryOf,
  failuresOf,
  type BucketCounts,
  type DayUsage,
  type FiledUsage,
  type KeyUsage,
} from '../usage.js';

/*
 * One key's usage as the fields of a Redis hash: `<section>|<name>|<metric>`, where the section is
 * `e` (an endpoint: its path), `c` (a customer: its id) or `m` (a minute: its start, epoch ms), and
 * the metric is what the name lies before: r (requests), s (successful), f (failed), l (rate-limited,
 * minutes only) or d (summed response ms, not for customers). The name is what lies between the first
 * `|` and the last, so a `|` in a path or a customer id needs no escaping. Replicas add pushes into the
 * same fields (HINCRBY; HINCRBYFLOAT for d, the one fractional metric); the format is that of every
 * earlier version, which replicas share during a rolling upgrade.
 *
 * Beside them, the same requests by UTC day, for the endpoint and customer series:
 * `de|<day start, epoch ms>|<path>|<metric>` and `dc|<day start>|<customer id>|<metric>`, with the
 * metrics of a minute (the name follows the day's digits). Versions before them pass these fields
 * over (their second character is no `|`) and read the totals; what such a version pushes has no day,
 * and is filed under the day it is applied (decision record 0012).
 *
 * Request facts (decision record 0026) add metrics an earlier version passes over (it knows only the
 * one-character metrics above): `$` (units charged; endpoints too), `n` (requests that settled nothing
 * readable, charged their reservation; endpoints too), `2` `3` `4` `5` (status classes),
 * `oc` `od` `oe` `or` `ob` `ou` (outcomes but rate-limited, which is `l`) and `h<bin>` (requests in
 * that latency bin), on minutes and days. A key's part filed under a consumer repeats the fields
 * above behind `p|<consumer id, URI-encoded>|`, beside the key's whole: an earlier version passes the
 * parts over and still counts every request once, under no consumer.
 *
 * The route series (decision record 0035) add `dr|<day start>|<route id>|<metric>` (an empty id: the
 * catch-all or no route), with a day's metrics. Earlier versions pass it over like any field of a
 * section they do not know, and count the request in the totals, minutes and days as before.
 *
 * The failure log (docs/decisions/0084-failure-log.md) adds `xf|<random id>`, one entry's JSON set
 * with HSET (the id, made once per push, keeps entries of different pushes apart), and
 * `xl|<minute>|<consumer id>|<code>`, failures left out, added with HINCRBY. Earlier versions pass
 * both over (no section `x`).
 */

type Metric =
  | 'r'
  | 's'
  | 'f'
  | 'l'
  | 'd'
  | '$'
  | 'n'
  | '2'
  | '3'
  | '4'
  | '5'
  | 'oc'
  | 'ol'
  | 'od'
  | 'oe'
  | 'or'
  | 'oo'
  | 'oa'
  | 'ob'
  | 'ou';
type Section = 'e' | 'c' | 'm';
type Measure = Exclude<keyof BucketCounts, 'latency'>;

const PROPERTY: Record<Metric, Measure> = {
  r: 'requests',
  s: 'successful',
  f: 'failed',
  l: 'rateLimited',
  d: 'totalDurationMs',
  $: 'cost',
  n: 'unsettled',
  '2': 'status2xx',
  '3': 'status3xx',
  '4': 'status4xx',
  '5': 'status5xx',
  oc: 'creditsExhausted',
  ol: 'concurrencyLimited',
  od: 'disabled',
  oe: 'expired',
  or: 'routeNotAllowed',
  oo: 'originNotAllowed',
  oa: 'addressNotAllowed',
  ob: 'backendError',
  ou: 'backendUnreachable',
};
const BUCKET_METRICS = Object.keys(PROPERTY) as Metric[];
const METRICS: Record<Section, readonly Metric[]> = {
  e: ['r', 's', 'f', 'd', '$', 'n'],
  c: ['r', 's', 'f'],
  m: BUCKET_METRICS,
};
/** Summed response times: the metric added with HINCRBYFLOAT. */
const SUM: Metric = 'd';
/** A latency bin's metric: `h` and the bin's number. */
const BIN = 'h';
/** The prefix of a consumer's part. */
const PART = 'p|';
/** The prefixes of a failure log entry and of a left-out count. */
const FAILURE_ENTRY = 'xf|';
const FAILURES_LEFT_OUT = 'xl|';

/** A bucket's metric: a known one, or a latency bin. */
const isBucketMetric = (metric: string): boolean =>
  BUCKET_METRICS.includes(metric as Metric) || metric.startsWith(BIN);

/** The parts of a totals or minute field, or undefined for a field of no known section and metric. */
export function parseField(field: string): { section: Section; name: string; metric: string } | undefined {
  const section = field[0] as Section;
  const last = field.lastIndexOf('|');
  if (field[1] !== '|' || last < 2 || METRICS[section] === undefined) return undefined;
  const metric = field.slice(last + 1);
  const known = section === 'm' ? isBucketMetric(metric) : METRICS[section].includes(metric as Metric);
  return known ? { section, name: field.slice(2, last), metric } : undefined;
}

/** A day's sections and the entries of a day each fills. */
const DAY_SECTIONS = { de: 'endpoints', dc: 'customers', dr: 'routes' } as const satisfies Record<
  string,
  keyof DayUsage
>;
type DaySection = keyof typeof DAY_SECTIONS;

/** The parts of a day field, or undefined for any other field. */
function parseDayField(
  field: string,
): { section: DaySection; day: number; name: string; metric: string } | undefined {
  const section = field.slice(0, 2) as DaySection;
  if (!Object.hasOwn(DAY_SECTIONS, section) || field[2] !== '|') return undefined;
  const bar = field.indexOf('|', 3);
  const last = field.lastIndexOf('|');
  const day = Number(field.slice(3, bar));
  const metric = field.slice(last + 1);
  if (bar < 0 || last <= bar || String(day) !== field.slice(3, bar) || !isBucketMetric(metric))
    return undefined;
  return { section, day, name: field.slice(bar + 1, last), metric };
}

/**
 * A key's usage as field/value pairs, zeros left out: `counts` for HINCRBY, `sums` for HINCRBYFLOAT,
 * `sets` (failure log entries) for HSET.
 */
export interface EncodedUsage {
  readonly counts: (string | number)[];
  readonly sums: (string | number)[];
  readonly sets: string[];
}

export function encodeUsage(usage: KeyUsage): EncodedUsage {
  const encoded: EncodedUsage = { counts: [], sums: [], sets: [] };
  encodeFiled(usage, '', encoded);
  for (const [consumerId, part] of usage.consumers)
    encodeFiled(part, `${PART}${encodeURIComponent(consumerId)}|`, encoded);
  if (usage.failures !== undefined) {
    for (const entry of usage.failures.entries)
      encoded.sets.push(FAILURE_ENTRY + randomBytes(12).toString('base64url'), encodeEntry(entry));
    for (const [name, n] of usage.failures.leftOut) encoded.counts.push(FAILURES_LEFT_OUT + name, n);
  }
  return encoded;
}

function encodeFiled(usage: FiledUsage, part: string, encoded: EncodedUsage): void {
  // Pushed one by one: a key with many customers has more fields than a spread can pass.
  const put = (prefix: string, metrics: readonly Metric[], counts: object) => {
    for (const metric of metrics) {
      const value = (counts as BucketCounts)[PROPERTY[metric]];
      if (value !== 0 && value !== undefined)
        (metric === SUM ? encoded.sums : encoded.counts).push(`${part}${prefix}|${metric}`, value);
    }
    const latency = (counts as Partial<BucketCounts>).latency;
    if (latency !== undefined)
      for (const [bin, n] of latency) encoded.counts.push(`${part}${prefix}|${BIN}${bin}`, n);
  };
  for (const [endpoint, counts] of usage.endpoints) put(`e|${endpoint}`, METRICS.e, counts);
  for (const [customer, counts] of usage.customers) put(`c|${customer}`, METRICS.c, counts);
  for (const [minute, counts] of usage.minutes) put(`m|${minute}`, METRICS.m, counts);
  for (const [day, counts] of usage.days) {
    for (const [endpoint, c] of counts.endpoints) put(`de|${day}|${endpoint}`, METRICS.m, c);
    for (const [customer, c] of counts.customers) put(`dc|${day}|${customer}`, METRICS.m, c);
    for (const [route, c] of counts.routes) put(`dr|${day}|${route}`, METRICS.m, c);
  }
}

/**
 * A flat HGETALL reply (field, value, ...) as one key's usage. Each field of a hash comes once, so
 * every value is set, not added: adding usage up (and capping its names) is mergeKeyUsage's and the
 * store's job. Fields of no known section or metric are passed over.
 */
export function decodeUsage(flat: readonly string[]): KeyUsage {
  const usage = emptyKeyUsage();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    let field = flat[i]!;
    if (decodeFailure(usage, field, flat[i + 1]!)) continue;
    let into: FiledUsage = usage;
    if (field.startsWith(PART)) {
      const bar = field.indexOf('|', PART.length);
      if (bar < 0) continue;
      let consumerId: string;
      try {
        consumerId = decodeURIComponent(field.slice(PART.length, bar));
      } catch {
        continue;
      }
      into = entryOf(usage.consumers, consumerId, emptyFiledUsage);
      field = field.slice(bar + 1);
    }
    const dated = parseDayField(field);
    if (dated !== undefined) {
      const day = entryOf(into.days, dated.day, emptyDay);
      setMetric(
        entryOf(day[DAY_SECTIONS[dated.section]], dated.name, emptyBucket),
        dated.metric,
        flat[i + 1]!,
      );
      continue;
    }
    const parsed = parseField(field);
    if (parsed === undefined) continue;
    const entry = entryIn(into, parsed.section, parsed.name);
    if (entry !== undefined) setMetric(entry, parsed.metric, flat[i + 1]!);
  }
  return usage;
}

/** A failure log field into `usage`'s failures; false for a field of any other kind. */
function decodeFailure(usage: KeyUsage, field: string, value: string): boolean {
  if (field.startsWith(FAILURE_ENTRY)) {
    const entry = decodeEntry(value);
    if (entry !== undefined) failuresOf(usage).entries.push(entry);
    return true;
  }
  if (!field.startsWith(FAILURES_LEFT_OUT)) return false;
  failuresOf(usage).leftOut.set(field.slice(FAILURES_LEFT_OUT.length), Number(value));
  return true;
}

/** Sets one metric of an entry (a latency bin adds its count to the entry's histogram). */
function setMetric(entry: object, metric: string, value: string): void {
  if (metric.startsWith(BIN)) addBinText((entry as BucketCounts).latency, metric.slice(BIN.length), value);
  else (entry as Record<string, number>)[PROPERTY[metric as Metric]] = Number(value);
}

function entryIn(usage: FiledUsage, section: Section, name: string): object | undefined {
  if (section === 'e') return entryOf(usage.endpoints, name, emptyEndpoint);
  if (section === 'c') return entryOf(usage.customers, name, emptyCounts);
  const minute = Number(name);
  return String(minute) === name ? entryOf(usage.minutes, minute, emptyBucket) : undefined;
}
