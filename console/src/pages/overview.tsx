/** The fleet's traffic over time (requests, 429s, errors) and the busiest keys of the range. */
import { useMemo, useState } from 'preact/hooks';
import { call } from '../api';
import { ChoiceGroup } from '../components/choice-group';
import { CsvButton } from '../components/csv-button';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { errorsOf, UsageChart } from '../components/usage-chart';
import { formatNumber } from '../format';
import { href, hrefWith, navigate, type Route } from '../route';
import type { FleetUsageResponse } from '../types';
import { rangePreset, rangeQuery, RANGES, sumBuckets } from '../usage';
import { useApi } from '../use-api';

export function OverviewPage({ route }: { route: Route }) {
  const preset = rangePreset(route.query.get('range'));
  // The range ends when it was chosen (or refreshed), not at every render.
  const [refreshed, setRefreshed] = useState(0);
  const range = useMemo(() => rangeQuery(preset), [preset.id, refreshed]);
  const usage = useApi(
    (signal) =>
      call<FleetUsageResponse>('GET', '/tollgate/usage', {
        query: { ...range, granularity: preset.granularity },
        signal,
      }),
    [range],
  );
  const totals = usage.data && sumBuckets(usage.data.buckets);
  const errors = usage.data ? usage.data.buckets.reduce((sum, b) => sum + errorsOf(b), 0) : 0;
  return (
    <>
      <PageTitle title="Overview" />
      <div class="toolbar">
        <ChoiceGroup
          label="Range"
          options={RANGES}
          value={preset.id}
          onChange={(id) => navigate(hrefWith(href(), { range: id }))}
        />
        <button type="button" class="secondary" onClick={() => setRefreshed(refreshed + 1)}>
          Refresh
        </button>
        <CsvButton
          path="/tollgate/usage"
          query={{ ...range, granularity: preset.granularity }}
          name={`usage-all-keys-${preset.granularity}`}
        />
      </div>
      <ErrorMessage error={usage.error} />
      {usage.loading && !usage.data && <p role="status">Loading…</p>}
      {usage.data && totals && (
        <>
          <dl class="stats" aria-label="Totals for the range">
            <div>
              <dt>Requests</dt>
              <dd>{formatNumber(totals.requests)}</dd>
            </div>
            <div>
              <dt>Refused (429)</dt>
              <dd>{formatNumber(totals.rateLimited)}</dd>
            </div>
            <div>
              <dt>Errors</dt>
              <dd>{formatNumber(errors)}</dd>
            </div>
            <div>
              <dt>Successful</dt>
              <dd>{formatNumber(totals.successful)}</dd>
            </div>
          </dl>
          <UsageChart
            buckets={usage.data.buckets}
            caption={`All keys, ${preset.label.toLowerCase()}, per ${usage.data.granularity}`}
          />
          <section aria-labelledby="top-keys">
            <h2 id="top-keys">Top keys</h2>
            {usage.data.topKeys.length === 0 ? (
              <p>No key was used in this range.</p>
            ) : (
              <table class="data">
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col" class="num">
                      Requests
                    </th>
                    <th scope="col" class="num">
                      Refused (429)
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {usage.data.topKeys.map((k) => (
                    <tr key={k.consumerApiKeyId}>
                      <td data-label="Key">
                        <a href={href('keys', k.consumerApiKeyId)}>{k.name}</a>{' '}
                        <span class="mono muted">{k.consumerApiKeyId}</span>
                      </td>
                      <td class="num" data-label="Requests">
                        {formatNumber(k.requests)}
                      </td>
                      <td class="num" data-label="Refused (429)">
                        {formatNumber(k.rateLimited)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
    </>
  );
}
