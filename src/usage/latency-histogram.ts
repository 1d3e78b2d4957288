/**
 * Response times as a mergeable histogram (docs/guides/usage-and-billing.md, docs/decisions/0026): fixed bins
 * whose bounds grow by GROWTH, so any value is reported within RELATIVE_ERROR of itself, however
 * many histograms of buckets, keys or replicas are added up. A histogram is sparse: bin → count,
 * only the bins that hold something. Adding two is adding their counts bin by bin, which Redis
 * (HINCRBY per bin), the stores (a JSON object per row, merged in SQL) and memory all do alike.
 */

/** Bin i > 0 holds the values in (MIN_MS · GROWTH^(i-1), MIN_MS · GROWTH^i]; bin 0 those up to MIN_MS. */
const GROWTH = 1.05;
/** A microsecond: below what performance.now() measures of a request. */
const MIN_MS = 0.001;
/** GROWTH^MAX_BIN µs is 22 years: a longer (or non-finite) time counts in the last bin. */
export const MAX_BIN = 700;
const LOG_GROWTH = Math.log(GROWTH);
/** A bin's value is the harmonic mean of its bounds, 2·upper/(GROWTH+1): within this of any value in it. */
export const RELATIVE_ERROR = (GROWTH - 1) / (GROWTH + 1);

/** bin → count, only bins with a count. */
export type LatencyHistogram = Map<number, number>;

/** The bin that counts a response time of `ms`. */
export function binOf(ms: number): number {
  if (!(ms > MIN_MS)) return 0;
  return Math.min(MAX_BIN, Math.ceil(Math.log(ms / MIN_MS) / LOG_GROWTH));
}

/** The value a bin stands for, ms: within RELATIVE_ERROR of every value it counts (bin 0: MIN_MS). */
export function valueOfBin(bin: number): number {
  return bin === 0 ? MIN_MS : (2 * MIN_MS * GROWTH ** bin) / (GROWTH + 1);
}

export function addToBin(histogram: LatencyHistogram, bin: number, count = 1): void {
  histogram.set(bin, (histogram.get(bin) ?? 0) + count);
}

export function mergeHistogram(into: LatencyHistogram, from: LatencyHistogram): void {
  for (const [bin, count] of from) addToBin(into, bin, count);
}

/** `from` less `part` (a part of it), bins left empty removed. */
export function subtractHistogram(from: LatencyHistogram, part: LatencyHistogram): void {
  for (const [bin, count] of part) {
    const left = (from.get(bin) ?? 0) - count;
    if (left > 0) from.set(bin, left);
    else from.delete(bin);
  }
}

/**
 * The `p`-th percentile (0 < p ≤ 100) by nearest rank: the value of the ⌈p/100 · n⌉-th smallest
 * response time, within RELATIVE_ERROR of it, to the microsecond; null when the histogram is empty.
 */
export function percentile(histogram: LatencyHistogram, p: number): number | null {
  let n = 0;
  for (const count of histogram.values()) n += count;
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * n));
  let seen = 0;
  for (const bin of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(bin)!;
    if (seen >= rank) return Math.round(valueOfBin(bin) * 1000) / 1000;
  }
  return null;
}

/** As stored in a row: a JSON object of bin → count, `{}` when empty. */
export function histogramJson(histogram: LatencyHistogram): string {
  let json = '';
  for (const [bin, count] of histogram) if (count > 0) json += `${json === '' ? '' : ','}"${bin}":${count}`;
  return `{${json}}`;
}

/** Adds one stored bin (its number and count as text or number) when both are what a bin holds. */
export function addBinText(histogram: LatencyHistogram, bin: string, count: unknown): void {
  const index = Number(bin);
  const n = Number(count);
  if (Number.isInteger(index) && index >= 0 && index <= MAX_BIN && String(index) === bin && n > 0)
    addToBin(histogram, index, n);
}
