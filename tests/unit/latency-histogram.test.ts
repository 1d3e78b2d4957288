import fc from 'fast-check';
import {
  binOf,
  histogramJson,
  mergeHistogram,
  percentile,
  RELATIVE_ERROR,
  subtractHistogram,
  addToBin,
  type LatencyHistogram,
} from '../../src/usage/latency-histogram.js';

/** The exact `p`-th percentile by nearest rank: the ⌈p/100 · n⌉-th smallest value. */
function exactPercentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
}

function histogramOf(values: readonly number[]): LatencyHistogram {
  const histogram: LatencyHistogram = new Map();
  for (const v of values) addToBin(histogram, binOf(v));
  return histogram;
}

/** Response times as a proxy sees them: 10 µs to an hour, spread over every order of magnitude. */
const latency = fc.double({ min: -2, max: 6.5, noNaN: true }).map((e) => 10 ** e);
const latencies = fc.array(latency, { minLength: 1, maxLength: 400 });
const sameHistogram = (a: LatencyHistogram, b: LatencyHistogram) =>
  expect(new Map([...a].sort())).toEqual(new Map([...b].sort()));

describe('the latency histogram', () => {
  it('reports p50, p95 and p99 within 5 % of the exact percentile, whatever the response times', () => {
    expect(RELATIVE_ERROR).toBeLessThan(0.05);
    fc.assert(
      fc.property(latencies, (values) => {
        const histogram = histogramOf(values);
        for (const p of [50, 95, 99]) {
          const exact = exactPercentile(values, p);
          expect(Math.abs(percentile(histogram, p)! - exact)).toBeLessThanOrEqual(0.05 * exact);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('answers null for an empty bucket', () => {
    expect(percentile(new Map(), 50)).toBeNull();
  });

  it('merges like the values it counts: merging the parts is counting the whole, in any grouping', () => {
    fc.assert(
      fc.property(latencies, latencies, latencies, (a, b, c) => {
        const left = histogramOf(a);
        const bc = histogramOf(b);
        mergeHistogram(bc, histogramOf(c));
        mergeHistogram(left, bc);
        const right = histogramOf(a);
        mergeHistogram(right, histogramOf(b));
        mergeHistogram(right, histogramOf(c));
        sameHistogram(left, right);
        sameHistogram(left, histogramOf([...c, ...a, ...b]));
      }),
    );
  });

  it('takes a part back out exactly, leaving no empty bins', () => {
    fc.assert(
      fc.property(latencies, latencies, (rest, part) => {
        const whole = histogramOf([...rest, ...part]);
        subtractHistogram(whole, histogramOf(part));
        sameHistogram(whole, histogramOf(rest));
        expect([...whole.values()].every((n) => n > 0)).toBe(true);
      }),
    );
  });

  it('is stored as a small JSON object of bin to requests', () => {
    const histogram = histogramOf([1, 1, 1_000]);
    expect(JSON.parse(histogramJson(histogram))).toEqual({ [binOf(1)]: 2, [binOf(1_000)]: 1 });
    expect(histogramJson(new Map())).toBe('{}');
    // Every time beyond what a bin can tell (or none at all) still counts, in the first or last bin.
    expect(binOf(0)).toBe(0);
    expect(binOf(Number.POSITIVE_INFINITY)).toBe(binOf(1e300));
  });
});
