/**
 * A key's usage over a range: the chart (granularity switch), and its endpoints and customers over the
 * same range, from the API's `groupBy` series (day or month buckets, the granularities it groups at).
 * The series count requests, successes and failures; they do not split out 429s, nor time customers'
 * requests, so the tables show only what they count.
 */
import { useMemo, useState } from 'preact/hooks';
import { call, segment } from '../api';
import { ChoiceGroup } from '../components/choice-group';
import { CsvButton } from '../components/csv-button';
import { ErrorMessage } from '../components/error-message';
import { UsageChart } from '../components/usage-chart';
import { formatNumber } from '../format';
import { href, hrefWith, navigate, type Route } from '../route';
import type { KeyUsageResponse } from '../types';
import { GRANULARITIES, rangePreset, rangeQuery, RANGES, sumBuckets, type Granularity } from '../usage';
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
      call<KeyUsageResponse>('GET', `/consumer-api-key/${segment(keyId)}/usage`, {
        query: { ...range, granularity, groupBy: grouping },
        signal,
      }),
    [keyId, grouping, range, granularity],
  );
  const rows = (usage.data?.series ?? []).map((s) => ({
    name: (grouping === 'endpoint' ? s.endpoint : s.customerId) ?? '',
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
  const preset = rangePreset(route.query.get('range'));
  const chosen = route.query.get('granularity');
  const granularity: Granularity = (GRANULARITIES as readonly string[]).includes(chosen ?? '')
    ? (chosen as Granularity)
    : preset.granularity;
  // The range ends when it was chosen (or refreshed), not at every render.
  const [refreshed, setRefreshed] = useState(0);
  const range = useMemo(() => rangeQuery(preset), [preset.id, refreshed]);
  const usage = useApi(
    (signal) =>
      call<KeyUsageResponse>('GET', `/consumer-api-key/${segment(keyId)}/usage`, {
        query: { ...range, granularity },
        signal,
      }),
    [keyId, range, granularity],
  );
  const show = (query: { range?: string; granularity?: string }) =>
    navigate(hrefWith(href('keys', keyId), { range: preset.id, granularity: chosen, ...query }));
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage over time</h2>
      <div class="toolbar">
        {/* A new range starts at its own granularity; a granularity chosen here stays until then. */}
        <ChoiceGroup
          label="Range"
          options={RANGES}
          value={preset.id}
          onChange={(id) => show({ range: id, granularity: undefined })}
        />
        <div class="field inline">
          <label for="granularity">Granularity</label>
          <select
            id="granularity"
            value={granularity}
            onChange={(e) => show({ granularity: e.currentTarget.value })}
          >
            {GRANULARITIES.map((g) => (
              <option key={g} value={g}>
                {g[0]!.toUpperCase() + g.slice(1)}
              </option>
            ))}
          </select>
        </div>
        <button type="button" class="secondary" onClick={() => setRefreshed(refreshed + 1)}>
          Refresh
        </button>
        <CsvButton
          path={`/consumer-api-key/${segment(keyId)}/usage`}
          query={{ ...range, granularity }}
          name={`usage-${keyId}-${granularity}`}
        />
      </div>
      <ErrorMessage error={usage.error} />
      {usage.data && (
        <UsageChart
          buckets={usage.data.buckets}
          caption={`This key, ${preset.label.toLowerCase()}, per ${usage.data.granularity}`}
        />
      )}
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
    </section>
  );
}
