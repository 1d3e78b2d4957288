/**
 * Usage over a range, the consumer's or one key's: the console's toolbar (range, granularity, CSV) and
 * charts (requests, why requests failed, response times), and what the range cost in credits.
 */
import { ErrorMessage } from '../../../console/src/components/error-message';
import { TimeChart, type Series } from '../../../console/src/components/time-chart';
import { UsageCharts } from '../../../console/src/components/usage-chart';
import { UsageToolbar, useUsageRange } from '../../../console/src/components/usage-toolbar';
import { formatNumber } from '../../../console/src/format';
import type { Route } from '../../../console/src/route';
import { useApi } from '../../../console/src/use-api';
import { call, csv } from '../portal-api';
import type { UsageResponse } from '../portal-types';

const COST: readonly Series[] = [
  {
    label: 'Credits spent',
    className: 'series-credits',
    color: '#7c3aed',
    value: (b) => b.cost,
    total: (buckets) => buckets.reduce((sum, b) => sum + b.cost, 0),
  },
];

export function PortalUsage({
  route,
  segments,
  path,
  subject,
  fileName,
}: {
  route: Route;
  /** The page's own address, which holds the range. */
  segments: readonly string[];
  /** The API's usage path: `/usage`, `/keys/<id>/usage`. */
  path: string;
  /** Whose usage, in the charts' captions: "Your account", "This key". */
  subject: string;
  fileName: string;
}) {
  const usage = useUsageRange(route, segments);
  const query = { ...usage.range, granularity: usage.granularity };
  const data = useApi(
    (signal) => call<UsageResponse>('GET', path, { query, signal }),
    [path, usage.range, usage.granularity],
  );
  const caption = `${subject}, ${usage.preset.label.toLowerCase()}, per ${data.data?.granularity ?? usage.granularity}`;
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage over time</h2>
      <UsageToolbar usage={usage} csv={{ load: () => csv(path, query), name: fileName }} />
      <ErrorMessage error={data.error} />
      {data.loading && !data.data && <p role="status">Loading usage…</p>}
      {data.data && (
        <>
          <UsageCharts buckets={data.data.buckets} latencyMs={data.data.latencyMs} caption={caption} />
          <TimeChart
            buckets={data.data.buckets}
            caption={`${caption}: credits spent`}
            series={COST}
            legendName="Cost"
            tableName="credits spent"
            format={formatNumber}
            rangeNote="Total for the range"
          />
        </>
      )}
    </section>
  );
}
