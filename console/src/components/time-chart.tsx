/**
 * One chart of usage buckets over time, drawn by uPlot on a canvas, with the same figures in words: a
 * legend (each series can be hidden from the keyboard; it shows the bucket under the pointer, or the
 * range as a whole) and the buckets as a table on demand. Lines, or bars stacked in the legend's order.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { formatTime } from '../format';
import type { UsageBucket } from '../types';

export interface Series {
  readonly label: string;
  /** Colours the legend's swatch (styles.css); `color` draws the canvas. */
  readonly className: string;
  readonly color: string;
  /** The bucket's value; null: none (an empty bucket's percentile). */
  readonly value: (b: UsageBucket) => number | null;
  /** What the legend says of the whole range. */
  readonly total: (buckets: readonly UsageBucket[]) => number | null;
}

export interface TimeChartProps {
  readonly buckets: readonly UsageBucket[];
  readonly caption: string;
  readonly series: readonly Series[];
  /** The legend's accessible name: unique on the page. */
  readonly legendName: string;
  /** What the table shows, in its button's words: "Show the <tableName> as a table". */
  readonly tableName: string;
  readonly stacked?: boolean;
  /** How a value reads: `1,234`, `85 ms`. */
  readonly format: (value: number) => string;
  /** The legend's words for the whole range: "Totals for the range". */
  readonly rangeNote: string;
}

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

/**
 * The plotted columns. Stacked: each shown series is drawn as a bar from zero to its value plus those
 * of the shown series after it, the tallest first, so each shows above the next.
 */
function columns(
  buckets: readonly UsageBucket[],
  series: readonly Series[],
  shown: readonly boolean[],
  stacked: boolean,
): (number | null)[][] {
  const raw = series.map((s) => buckets.map(s.value));
  if (!stacked) return raw;
  const drawn: (number | null)[][] = [];
  let below = buckets.map(() => 0);
  for (let i = series.length - 1; i >= 0; i--) {
    if (shown[i]) below = below.map((v, j) => v + (raw[i]![j] ?? 0));
    drawn[i] = shown[i] ? below : buckets.map(() => null);
  }
  return drawn;
}

export function TimeChart(props: TimeChartProps) {
  const { buckets, caption, series, legendName, tableName, stacked = false, format, rangeNote } = props;
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [shown, setShown] = useState<readonly boolean[]>(series.map(() => true));
  const [cursor, setCursor] = useState<number | null>(null);
  const [showTable, setShowTable] = useState(false);
  const tableId = useId();

  useEffect(
    () => {
      const target = host.current;
      if (!target) return;
      const data: uPlot.AlignedData = [
        buckets.map((b) => Date.parse(b.start) / 1000),
        ...columns(buckets, series, shown, stacked),
      ];
      const bars = stacked ? uPlot.paths.bars!({ size: [0.8, 48] }) : undefined;
      const chart = new uPlot(
        {
          width: Math.max(200, target.clientWidth),
          height: HEIGHT,
          tzDate: utc,
          legend: { show: false },
          // Room on the right for half the last time label, centred on the range's end: a date
          // (`2026-11-24`, on the 7- and 30-day ranges) needs more than a time (`14:00`).
          padding: [12, 48, 0, 0],
          cursor: { drag: { x: false, y: false } },
          scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] } },
          series: [
            {},
            ...series.map((s, i) => ({
              label: s.label,
              stroke: s.color,
              width: stacked ? 0 : 2,
              show: shown[i],
              ...(bars && { paths: bars, fill: s.color, points: { show: false } }),
            })),
          ],
          // Room between the time labels for a whole date.
          axes: [
            { stroke: '#374151', values: timeLabels, space: 90, label: 'Time (UTC)', labelSize: 24 },
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
      // Lines are rebuilt for new data (visibility is applied below without a rebuild); a stack is rebuilt
      // when a series is hidden, since each bar holds the series after it.
    },
    stacked ? [buckets, shown] : [buckets],
  );

  const toggle = (i: number) => {
    const next = shown.map((on, j) => (j === i ? !on : on));
    setShown(next);
    if (!stacked) plot.current?.setSeries(i + 1, { show: next[i]! });
  };

  const hovered = cursor === null ? undefined : buckets[cursor];
  const say = (value: number | null) => (value === null ? '—' : format(value));
  const totals = series.map((s) => s.total(buckets));
  const summary = `${caption}: ${series.map((s, i) => `${say(totals[i]!)} ${s.label.toLowerCase()}`).join(', ')}`;
  return (
    <figure class="chart">
      <figcaption>{caption}</figcaption>
      <div ref={host} class="chart-canvas" role="img" aria-label={summary} />
      <ul class="legend" aria-label={legendName}>
        {series.map((s, i) => (
          <li key={s.label}>
            <button
              type="button"
              class={`legend-item ${s.className}`}
              aria-pressed={shown[i]}
              onClick={() => toggle(i)}
            >
              <span class="swatch" aria-hidden="true" />
              {s.label}: {say(hovered ? s.value(hovered) : totals[i]!)}
            </button>
          </li>
        ))}
        <li class="legend-when">{hovered ? formatTime(hovered.start) : rangeNote}</li>
      </ul>
      <button
        type="button"
        class="link"
        aria-expanded={showTable}
        aria-controls={tableId}
        onClick={() => setShowTable(!showTable)}
      >
        {showTable ? `Hide the ${tableName} table` : `Show the ${tableName} as a table`}
      </button>
      <div id={tableId} hidden={!showTable}>
        {showTable && (
          <table class="data">
            <caption class="visually-hidden">{caption}, by bucket</caption>
            <thead>
              <tr>
                <th scope="col">Start (UTC)</th>
                {series.map((s) => (
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
                  {series.map((s) => (
                    <td key={s.label} class="num" data-label={s.label}>
                      {say(s.value(b))}
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
