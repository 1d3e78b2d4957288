import { emptyBucket, emptyCounts, emptyDay, emptyEndpoint, emptyKeyUsage, entryOf, type BucketCounts, type KeyUsage } from '../usage.js';

/*
 * One key's usage as the fields of a Redis hash: `<section>|<name>|<metric>`, where the section is
 * `e` (an endpoint: its path), `c` (a customer: its id) or `m` (a minute: its start, epoch ms), and
 * the metric is r (requests), s (successful), f (failed), l (rate-limited, minutes only) or d (summed
 * response ms, not for customers). The name is what lies between the first two and the last two
 * characters, so a `|` in a path or a customer id needs no escaping. Replicas add pushes into the
 * same fields (HINCRBY; HINCRBYFLOAT for d, the one fractional metric); the format is that of every
 * earlier version, which replicas share during a rolling upgrade.
 *
 * Beside them, the same requests by UTC day, for the endpoint and customer series:
 * `de|<day start, epoch ms>|<path>|<metric>` and `dc|<day start>|<customer id>|<metric>`, with the
 * metrics of a minute (the name follows the day's digits). Versions before them pass these fields
 * over (their second character is no `|`) and read the totals; what such a version pushes has no day,
 * and is filed under the day it is applied (decision record 0012).
 */

type Metric = 'r' | 's' | 'f' | 'l' | 'd';
type Section = 'e' | 'c' | 'm';

const PROPERTY: Record<Metric, keyof BucketCounts> = { r: 'requests', s: 'successful', f: 'failed', l: 'rateLimited', d: 'totalDurationMs' };
const METRICS: Record<Section, readonly Metric[]> = { e: ['r', 's', 'f', 'd'], c: ['r', 's', 'f'], m: ['r', 's', 'f', 'l', 'd'] };
/** Summed response times: the metric added with HINCRBYFLOAT. */
const SUM: Metric = 'd';

/** The parts of a field name, or undefined for a field of no known section and metric. */
export function parseField(field: string): { section: Section; name: string; metric: Metric } | undefined {
  if (field.length < 4 || field[1] !== '|' || field[field.length - 2] !== '|') return undefined;
  const section = field[0] as Section;
  const metric = field[field.length - 1] as Metric;
  if (!METRICS[section]?.includes(metric)) return undefined;
  return { section, name: field.slice(2, -2), metric };
}

/** The parts of a day field, or undefined for any other field. */
function parseDayField(field: string): { section: 'de' | 'dc'; day: number; name: string; metric: Metric } | undefined {
  const section = field.slice(0, 2);
  if ((section !== 'de' && section !== 'dc') || field[2] !== '|' || field[field.length - 2] !== '|') return undefined;
  const bar = field.indexOf('|', 3);
  const day = Number(field.slice(3, bar));
  const metric = field[field.length - 1] as Metric;
  if (bar > field.length - 3 || String(day) !== field.slice(3, bar) || !METRICS.m.includes(metric)) return undefined;
  return { section, day, name: field.slice(bar + 1, -2), metric };
}

/** A key's usage as field/value pairs, zeros left out: `counts` for HINCRBY, `sums` for HINCRBYFLOAT. */
export interface EncodedUsage {
  readonly counts: (string | number)[];
  readonly sums: (string | number)[];
}

export function encodeUsage(usage: KeyUsage): EncodedUsage {
  const encoded: EncodedUsage = { counts: [], sums: [] };
  // Pushed one by one: a key with many customers has more fields than a spread can pass.
  const put = (prefix: string, metrics: readonly Metric[], counts: object) => {
    for (const metric of metrics) {
      const value = (counts as BucketCounts)[PROPERTY[metric]];
      if (value !== 0) (metric === SUM ? encoded.sums : encoded.counts).push(`${prefix}|${metric}`, value);
    }
  };
  for (const [endpoint, counts] of usage.endpoints) put(`e|${endpoint}`, METRICS.e, counts);
  for (const [customer, counts] of usage.customers) put(`c|${customer}`, METRICS.c, counts);
  for (const [minute, counts] of usage.minutes) put(`m|${minute}`, METRICS.m, counts);
  for (const [day, counts] of usage.days) {
    for (const [endpoint, c] of counts.endpoints) put(`de|${day}|${endpoint}`, METRICS.m, c);
    for (const [customer, c] of counts.customers) put(`dc|${day}|${customer}`, METRICS.m, c);
  }
  return encoded;
}

/**
 * A flat HGETALL reply (field, value, ...) as one key's usage. Each field of a hash comes once, so
 * every value is set, not added: adding usage up (and capping its names) is mergeKeyUsage's and the
 * store's job. Fields of no known section or metric are passed over.
 */
export function decodeUsage(flat: readonly string[]): KeyUsage {
  const usage = emptyKeyUsage();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const dated = parseDayField(flat[i]!);
    if (dated !== undefined) {
      const day = entryOf(usage.days, dated.day, emptyDay);
      entryOf(dated.section === 'de' ? day.endpoints : day.customers, dated.name, emptyBucket)[PROPERTY[dated.metric]] = Number(flat[i + 1]);
      continue;
    }
    const field = parseField(flat[i]!);
    if (field === undefined) continue;
    const entry = entryIn(usage, field.section, field.name);
    if (entry !== undefined) (entry as unknown as Record<string, number>)[PROPERTY[field.metric]] = Number(flat[i + 1]);
  }
  return usage;
}

function entryIn(usage: KeyUsage, section: Section, name: string): object | undefined {
  if (section === 'e') return entryOf(usage.endpoints, name, emptyEndpoint);
  if (section === 'c') return entryOf(usage.customers, name, emptyCounts);
  const minute = Number(name);
  return String(minute) === name ? entryOf(usage.minutes, minute, emptyBucket) : undefined;
}
