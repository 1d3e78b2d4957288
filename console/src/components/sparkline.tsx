/** A key's requests over the last 24 hours, one point per hour, as a small SVG line with a text alternative. */
import { formatNumber } from '../format';
import type { UsageBucket } from '../types';
import { refusedOf } from '../usage';

const WIDTH = 120;
const HEIGHT = 28;

export function Sparkline({ buckets }: { buckets: readonly UsageBucket[] }) {
  const total = buckets.reduce((sum, b) => sum + b.requests, 0);
  const refused = buckets.reduce((sum, b) => sum + refusedOf(b), 0);
  const peak = Math.max(1, ...buckets.map((b) => b.requests));
  const step = buckets.length > 1 ? WIDTH / (buckets.length - 1) : 0;
  const points = buckets
    .map((b, i) => `${(i * step).toFixed(1)},${(HEIGHT - 2 - (b.requests / peak) * (HEIGHT - 4)).toFixed(1)}`)
    .join(' ');
  const summary =
    `${formatNumber(total)} requests in 24 h` +
    (refused > 0 ? `, ${formatNumber(refused)} refused (429)` : '');
  return (
    <span class="sparkline">
      <svg width={WIDTH} height={HEIGHT} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary}>
        <polyline points={points} fill="none" stroke-width="1.5" class="sparkline-line" />
      </svg>
      <span class="sparkline-total" aria-hidden="true">
        {formatNumber(total)}
      </span>
    </span>
  );
}
