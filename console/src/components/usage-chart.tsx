/**
 * Requests, 429s and errors over time, drawn by uPlot on a canvas, with the same figures in words: a
 * legend of totals (each series can be hidden from the keyboard) and the buckets as a table on demand.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { formatNumber, formatTime } from '../format';
import type { UsageBucket } from '../types';

interface Series {
  readonly label: string;
  readonly className: string;
  readonly color: string;
  readonly value: (b: UsageBucket) => number;
}

/** Errors are the failed requests the limiter did not refuse: backend 4xx/5xx, 502, 504, disabled, expired. */
export const errorsOf = (b: UsageBucket): number => b.failed - b.rateLimited;

const SERIES: readonly Series[] = [
  { label: 'Requests', className: 'series-requests', color: '#1d4ed8', value: (b) => b.requests },
  { label: '429s', className: 'series-limited', color: '#b45309', value: (b) => b.rateLimited },
  { label: 'Errors', className: 'series-errors', color: '#b91c1c', value: errorsOf },
];

const HEIGHT = 260;
const DAY_SECONDS = 86_400;
const utc = (seconds: number) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC');

/**
 * The time axis in the console's form (UTC, 24-hour, ISO order), not uPlot's US default: months
 * `2026-11`, days `2026-11-21`, times `14:00` (the date instead at midnight, where a day begins).
 */
const timeLabels: uPlot.Axis.DynamicValues = (_plot, splits, _axis, _space, increment) =>
  splits.map((seconds) => {
    const iso = new Date(seconds * 1000).toISOString();
    if (increment >= 28 * DAY_SECONDS) return iso.slice(0, 7);
    const time = iso.slice(11, 16);
    return increment >= DAY_SECONDS || time === '00:00' ? iso.slice(0, 10) : time;
  });

export function UsageChart({ buckets, caption }: { buckets: readonly UsageBucket[]; caption: string }) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [shown, setShown] = useState<readonly boolean[]>(SERIES.map(() => true));
  const [cursor, setCursor] = useState<number | null>(null);
  const [showTable, setShowTable] = useState(false);
  const tableId = useId();

  useEffect(() => {
    const target = host.current;
    if (!target) return;
    const data: uPlot.AlignedData = [
      buckets.map((b) => Date.parse(b.start) / 1000),
      ...SERIES.map((s) => buckets.map(s.value)),
    ];
    const chart = new uPlot(
      {
        width: Math.max(200, target.clientWidth),
        height: HEIGHT,
        tzDate: utc,
        legend: { show: false },
        // Room on the right for the last time label.
        padding: [12, 28, 0, 0],
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] } },
        series: [
          {},
          ...SERIES.map((s, i) => ({ label: s.label, stroke: s.color, width: 2, show: shown[i] })),
        ],
        // Room between the time labels for a whole date.
        axes: [
          { stroke: '#374151', values: timeLabels, space: 90 },
          { stroke: '#374151', size: 60 },
        ],
        hooks: { setCursor: [(u) => setCursor(u.cursor.idx ?? null)] },
      },
      data,
      target,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() =>
      chart.setSize({ width: Math.max(200, target.clientWidth), height: HEIGHT }),
    );
    resize.observe(target);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
    // The chart is rebuilt for new data; series visibility is applied to it below without a rebuild.
  }, [buckets]);

  const toggle = (i: number) => {
    const next = shown.map((on, j) => (j === i ? !on : on));
    setShown(next);
    plot.current?.setSeries(i + 1, { show: next[i]! });
  };

  const hovered = cursor === null ? undefined : buckets[cursor];
  const totals = SERIES.map((s) => buckets.reduce((sum, b) => sum + s.value(b), 0));
  const summary = `${caption}: ${SERIES.map((s, i) => `${formatNumber(totals[i]!)} ${s.label.toLowerCase()}`).join(', ')}`;
  return (
    <figure class="chart">
      <figcaption>{caption}</figcaption>
      <div ref={host} class="chart-canvas" role="img" aria-label={summary} />
      <ul class="legend" aria-label="Series">
        {SERIES.map((s, i) => (
          <li key={s.label}>
            <button
              type="button"
              class={`legend-item ${s.className}`}
              aria-pressed={shown[i]}
              onClick={() => toggle(i)}
            >
              <span class="swatch" aria-hidden="true" />
              {s.label}: {formatNumber(hovered ? s.value(hovered) : totals[i]!)}
            </button>
          </li>
        ))}
        <li class="legend-when">{hovered ? formatTime(hovered.start) : 'Totals for the range'}</li>
      </ul>
      <button
        type="button"
        class="link"
        aria-expanded={showTable}
        aria-controls={tableId}
        onClick={() => setShowTable(!showTable)}
      >
        {showTable ? 'Hide the data table' : 'Show the data as a table'}
      </button>
      <div id={tableId} hidden={!showTable}>
        {showTable && (
          <table class="data">
            <caption class="visually-hidden">{caption}, by bucket</caption>
            <thead>
              <tr>
                <th scope="col">Start (UTC)</th>
                {SERIES.map((s) => (
                  <th key={s.label} scope="col" class="num">
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {buckets.map((b) => (
                <tr key={b.start}>
                  <td data-label="Start (UTC)">{formatTime(b.start)}</td>
                  {SERIES.map((s) => (
                    <td key={s.label} class="num" data-label={s.label}>
                      {formatNumber(s.value(b))}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </figure>
  );
}
