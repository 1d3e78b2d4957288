/**
 * The charts of a range of usage buckets (docs/guides/usage-and-billing.md, docs/guides/console.md), the same for a key, a consumer
 * and the fleet: requests, 429s and errors; why requests failed (or what the clients got, by status
 * class), stacked; and how fast they were answered (p50, p95, p99).
 */
import { useState } from 'preact/hooks';
import { formatNumber } from '../format';
import type { UsageBucket } from '../types';
import { refusedOf } from '../usage';
import { ChoiceGroup } from './choice-group';
import { TimeChart, type Series } from './time-chart';

/** Errors are the failed requests not refused with a 429: backend 4xx/5xx, 502, 504, disabled, expired. */
export const errorsOf = (b: UsageBucket): number => b.failed - refusedOf(b);

/** A count per bucket, summed over the range. */
function counted(label: string, className: string, color: string, value: (b: UsageBucket) => number): Series {
  return { label, className, color, value, total: (buckets) => buckets.reduce((s, b) => s + value(b), 0) };
}

const TRAFFIC: readonly Series[] = [
  counted('Requests', 'series-requests', '#1d4ed8', (b) => b.requests),
  counted('429s', 'series-limited', '#b45309', refusedOf),
  counted('Errors', 'series-errors', '#b91c1c', errorsOf),
];

const OUTCOMES: readonly Series[] = [
  counted('Rate limited', 'series-limited', '#b45309', (b) => b.outcomes.rateLimited),
  counted('Credits exhausted', 'series-credits', '#7c3aed', (b) => b.outcomes.creditsExhausted),
  counted('Too many in flight', 'series-places', '#be185d', (b) => b.outcomes.concurrencyLimited),
  counted('Disabled', 'series-disabled', '#4b5563', (b) => b.outcomes.disabled),
  counted('Expired', 'series-expired', '#a16207', (b) => b.outcomes.expired),
  counted('Route not allowed', 'series-route', '#0e7490', (b) => b.outcomes.routeNotAllowed),
  counted('Origin not allowed', 'series-origin', '#be185d', (b) => b.outcomes.originNotAllowed),
  counted('Address not allowed', 'series-address', '#0f766e', (b) => b.outcomes.addressNotAllowed),
  counted('Backend 5xx', 'series-errors', '#b91c1c', (b) => b.outcomes.backendError),
  counted(
    'Backend unreachable or timed out (502, 504)',
    'series-unreachable',
    '#111827',
    (b) => b.outcomes.backendUnreachable,
  ),
];

const STATUS_CLASSES: readonly Series[] = [
  counted('2xx', 'series-2xx', '#15803d', (b) => b.statusClasses['2xx']),
  counted('3xx', 'series-route', '#0e7490', (b) => b.statusClasses['3xx']),
  counted('4xx', 'series-limited', '#b45309', (b) => b.statusClasses['4xx']),
  counted('5xx', 'series-errors', '#b91c1c', (b) => b.statusClasses['5xx']),
];

type Percentiles = UsageBucket['latencyMs'];

/**
 * A percentile per bucket; over the range, the API's percentile of all the range's requests
 * (percentiles do not add up: the slowest bucket's p95 is not the range's).
 */
function percentile(label: keyof Percentiles, className: string, color: string, range: Percentiles): Series {
  return { label, className, color, value: (b) => b.latencyMs[label], total: () => range[label] };
}

const latencySeries = (range: Percentiles): readonly Series[] => [
  percentile('p50', 'series-requests', '#1d4ed8', range),
  percentile('p95', 'series-limited', '#b45309', range),
  percentile('p99', 'series-errors', '#b91c1c', range),
];

const FAILURE_VIEWS = [
  { id: 'outcomes', label: 'Why requests failed' },
  { id: 'status', label: 'Status classes' },
] as const;

const milliseconds = (ms: number) => `${ms < 10 ? ms.toFixed(1) : formatNumber(Math.round(ms))} ms`;

export function UsageCharts({
  buckets,
  latencyMs,
  caption,
}: {
  buckets: readonly UsageBucket[];
  /** The range's percentiles, as the API computed them over all its requests. */
  latencyMs: Percentiles;
  caption: string;
}) {
  const [view, setView] = useState<(typeof FAILURE_VIEWS)[number]['id']>('outcomes');
  return (
    <>
      <TimeChart
        buckets={buckets}
        caption={caption}
        series={TRAFFIC}
        legendName="Series"
        tableName="data"
        format={formatNumber}
        rangeNote="Totals for the range"
      />
      <ChoiceGroup label="Failures by" options={FAILURE_VIEWS} value={view} onChange={setView} />
      {view === 'outcomes' ? (
        <TimeChart
          key="outcomes"
          buckets={buckets}
          caption={`${caption}: why requests failed`}
          series={OUTCOMES}
          legendName="Outcomes"
          tableName="outcomes"
          stacked
          format={formatNumber}
          rangeNote="Totals for the range"
        />
      ) : (
        <TimeChart
          key="status"
          buckets={buckets}
          caption={`${caption}: what the clients got`}
          series={STATUS_CLASSES}
          legendName="Status classes"
          tableName="status classes"
          stacked
          format={formatNumber}
          rangeNote="Totals for the range"
        />
      )}
      <TimeChart
        buckets={buckets}
        caption={`${caption}: response times`}
        series={latencySeries(latencyMs)}
        legendName="Percentiles"
        tableName="response times"
        format={milliseconds}
        rangeNote="Over all the range’s requests"
      />
    </>
  );
}
