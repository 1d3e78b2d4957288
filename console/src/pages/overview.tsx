/**
 * The fleet's traffic over time (requests, 429s, errors; why requests failed; response times) and the
 * busiest keys of the range, after a word on the two ways Tollgate guards an API.
 */
import { NeedsScope, useAccess } from '../access';
import { api, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { ProxyOrVerify } from '../components/proxy-or-verify';
import { errorsOf, UsageCharts } from '../components/usage-chart';
import { UsageToolbar, useUsageRange } from '../components/usage-toolbar';
import { AS_CSV } from '../download';
import { formatNumber } from '../format';
import { href, type Route } from '../route';
import { sumBuckets } from '../usage';
import { useApi } from '../use-api';

export function OverviewPage({ route }: { route: Route }) {
  const usage = useUsageRange(route, []);
  const { lacks } = useAccess();
  const query = { ...usage.range, granularity: usage.granularity };
  const fleet = useApi(
    (signal) =>
      lacks('usage:read')
        ? Promise.resolve(undefined)
        : ok(api.GET('/tollgate/usage', { params: { query }, signal })),
    [usage.range, usage.granularity, lacks('usage:read')],
  );
  const totals = fleet.data && sumBuckets(fleet.data.buckets);
  const errors = fleet.data ? fleet.data.buckets.reduce((sum, b) => sum + errorsOf(b), 0) : 0;
  return (
    <>
      <PageTitle title="Overview" />
      <ProxyOrVerify />
      <UsageToolbar
        usage={usage}
        csv={{
          load: () => ok(api.GET('/tollgate/usage', { params: { query }, ...AS_CSV })),
          name: 'usage-all-keys',
        }}
      />
      {lacks('usage:read') && <NeedsScope scope="usage:read" what="The fleet’s traffic" />}
      <ErrorMessage error={fleet.error} />
      {fleet.loading && !fleet.data && <p role="status">Loading…</p>}
      {fleet.data && totals && (
        <>
          <dl class="stats" aria-label="Totals for the range">
            <div>
              <dt>Requests</dt>
              <dd>{formatNumber(totals.requests)}</dd>
            </div>
            <div>
              <dt>Refused (429)</dt>
              <dd>{formatNumber(totals.refused)}</dd>
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
          <UsageCharts
            buckets={fleet.data.buckets}
            latencyMs={fleet.data.latencyMs}
            caption={`All keys, ${usage.preset.label.toLowerCase()}, per ${fleet.data.granularity}`}
          />
          <section aria-labelledby="top-keys">
            <h2 id="top-keys">Top keys</h2>
            {fleet.data.topKeys.length === 0 ? (
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
                      Rate limited (429)
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {fleet.data.topKeys.map((k) => (
                    <tr key={k.consumerApiKeyId}>
                      <td data-label="Key">
                        <a href={href('keys', k.consumerApiKeyId)}>{k.name}</a>{' '}
                        <span class="mono muted">{k.consumerApiKeyId}</span>
                      </td>
                      <td class="num" data-label="Requests">
                        {formatNumber(k.requests)}
                      </td>
                      <td class="num" data-label="Rate limited (429)">
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
