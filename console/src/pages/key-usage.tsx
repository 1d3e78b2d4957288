/**
 * A key's usage over a range: the chart (granularity switch), and its endpoints and customers over the
 * same range, from the API's `groupBy` series (day or month buckets, the granularities it groups at).
 * The series count requests, successes and failures; they do not split out 429s, nor time customers'
 * requests, so the tables show only what they count.
 */
import { NeedsScope, useAccess } from '../access';
import { api, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { UsageCharts } from '../components/usage-chart';
import { UsageToolbar, useUsageRange } from '../components/usage-toolbar';
import { AS_CSV } from '../download';
import { formatNumber } from '../format';
import type { Route } from '../route';
import { sumBuckets } from '../usage';
import { useApi } from '../use-api';

type Grouping = 'endpoint' | 'customer';

function GroupTable({
  keyId,
  grouping,
  range,
  granularity,
}: {
  keyId: string;
  grouping: Grouping;
  range: { from: string; to: string };
  granularity: 'day' | 'month';
}) {
  const title = grouping === 'endpoint' ? 'Endpoints' : 'Customers';
  const column = grouping === 'endpoint' ? 'Endpoint' : 'Customer';
  const usage = useApi(
    (signal) =>
      ok(
        api.GET('/consumer-api-key/{consumerApiKeyId}/usage', {
          params: { path: { consumerApiKeyId: keyId }, query: { ...range, granularity, groupBy: grouping } },
          signal,
        }),
      ),
    [keyId, grouping, range, granularity],
  );
  const rows = (usage.data?.series ?? []).map((s) => ({
    name: 'endpoint' in s ? s.endpoint : 'customerId' in s ? s.customerId : (s.routeId ?? '(catch-all)'),
    ...sumBuckets(s.buckets),
  }));
  return (
    <section aria-labelledby={`${grouping}-title`}>
      <h3 id={`${grouping}-title`}>{title}</h3>
      <ErrorMessage error={usage.error} />
      {usage.data && rows.length === 0 && (
        <p>
          {grouping === 'endpoint'
            ? 'No request in this range.'
            : 'No request named a customer in this range.'}
        </p>
      )}
      {rows.length > 0 && (
        <table class="data">
          <caption class="visually-hidden">
            {title} over the range, by whole UTC {granularity}s
          </caption>
          <thead>
            <tr>
              <th scope="col">{column}</th>
              <th scope="col" class="num">
                Requests
              </th>
              <th scope="col" class="num">
                Successful
              </th>
              <th scope="col" class="num">
                Failed
              </th>
              {grouping === 'endpoint' && (
                <th scope="col" class="num">
                  Average time
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.name}>
                <td class="mono" data-label={column}>
                  {r.name}
                </td>
                <td class="num" data-label="Requests">
                  {formatNumber(r.requests)}
                </td>
                <td class="num" data-label="Successful">
                  {formatNumber(r.successful)}
                </td>
                <td class="num" data-label="Failed">
                  {formatNumber(r.failed)}
                </td>
                {grouping === 'endpoint' && (
                  <td class="num" data-label="Average time">
                    {r.averageResponseTimeMs.toFixed(1)} ms
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function KeyUsage({ keyId, route }: { keyId: string; route: Route }) {
  const usage = useUsageRange(route, ['keys', keyId]);
  const { range, granularity } = usage;
  const { lacks } = useAccess();
  const query = { ...range, granularity };
  const params = { path: { consumerApiKeyId: keyId }, query };
  const buckets = useApi(
    (signal) =>
      lacks('usage:read')
        ? Promise.resolve(undefined)
        : ok(api.GET('/consumer-api-key/{consumerApiKeyId}/usage', { params, signal })),
    [keyId, range, granularity, lacks('usage:read')],
  );
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage over time</h2>
      <UsageToolbar
        usage={usage}
        csv={{
          load: () => ok(api.GET('/consumer-api-key/{consumerApiKeyId}/usage', { params, ...AS_CSV })),
          name: `usage-${keyId}`,
        }}
      />
      {lacks('usage:read') && <NeedsScope scope="usage:read" what="Usage over time" />}
      <ErrorMessage error={buckets.error} />
      {buckets.data && (
        <UsageCharts
          buckets={buckets.data.buckets}
          latencyMs={buckets.data.latencyMs}
          caption={`This key, ${usage.preset.label.toLowerCase()}, per ${buckets.data.granularity}`}
        />
      )}
      {!lacks('usage:read') && (
        <div class="columns">
          <GroupTable
            keyId={keyId}
            grouping="endpoint"
            range={range}
            granularity={granularity === 'month' ? 'month' : 'day'}
          />
          <GroupTable
            keyId={keyId}
            grouping="customer"
            range={range}
            granularity={granularity === 'month' ? 'month' : 'day'}
          />
        </div>
      )}
    </section>
  );
}
