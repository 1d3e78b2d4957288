/**
 * Usage over a range, the consumer's or one key's: the console's toolbar (range, granularity, CSV) and
 * charts (requests, why requests failed, response times), and what the range was charged, in the
 * plan's unit, with the requests that reported nothing readable and kept their reservation.
 */
import { unitOf, unsettledText } from '../../../console/src/components/charged-usage';
import { ErrorMessage } from '../../../console/src/components/error-message';
import { TimeChart, type Series } from '../../../console/src/components/time-chart';
import { UsageCharts } from '../../../console/src/components/usage-chart';
import { UsageToolbar, useUsageRange } from '../../../console/src/components/usage-toolbar';
import { formatNumber } from '../../../console/src/format';
import type { Route } from '../../../console/src/route';
import { useApi } from '../../../console/src/use-api';
import { call, csv } from '../portal-api';
import type { PlanAndCredits, UsageResponse } from '../portal-types';

/** What each bucket was charged, in `unit`. */
const costIn = (unit: string): readonly Series[] => [
  {
    label: `Charged (${unit})`,
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
  const plan = useApi((signal) => call<PlanAndCredits>('GET', '/plan', { signal }), []);
  const unit = unitOf(plan.data?.current);
  const unsettled = data.data?.buckets.reduce((sum, b) => sum + b.unsettled, 0) ?? 0;
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
            caption={`${caption}: charged in ${unit}`}
            series={costIn(unit)}
            legendName="Cost"
            tableName={`${unit} charged`}
            format={formatNumber}
            rangeNote="Total for the range"
          />
          {unsettled > 0 && <p class="unsettled-note">{unsettledText(unsettled)} in this range.</p>}
        </>
      )}
    </section>
  );
}
