/** Why the consumer's requests failed lately: the failure log, newest first (contract section 27). */
import { ErrorMessage } from '../../../console/src/components/error-message';
import { countOf, formatNumber, formatTime } from '../../../console/src/format';
import { useApi } from '../../../console/src/use-api';
import { PortalTitle } from '../components/portal-title';
import { call } from '../portal-api';
import type { FailuresResponse } from '../portal-types';

export function FailuresPage() {
  const failures = useApi((signal) => call<FailuresResponse>('GET', '/failures', { signal }), []);
  const list = failures.data?.failures ?? [];
  return (
    <>
      <PortalTitle title="Failures" />
      <p class="muted">Requests your keys made that Tollgate refused or your API failed, newest first.</p>
      <ErrorMessage error={failures.error} />
      {failures.loading && !failures.data && <p role="status">Loading failures…</p>}
      {failures.data && list.length === 0 && <p>No request of yours failed lately.</p>}
      {list.length > 0 && (
        <table class="data">
          <caption class="visually-hidden">Your failed requests</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Key</th>
              <th scope="col">Request</th>
              <th scope="col" class="num">
                Status
              </th>
              <th scope="col">Why</th>
              <th scope="col" class="num">
                Took
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((f) => (
              <tr key={f.requestId}>
                <td data-label="Time">
                  <time dateTime={f.time}>{formatTime(f.time)}</time>
                </td>
                <td class="mono" data-label="Key">
                  {f.consumerApiKeyId}
                </td>
                <td class="mono" data-label="Request">
                  {f.method} {f.path}
                </td>
                <td class="num" data-label="Status">
                  {f.status}
                </td>
                <td data-label="Why">
                  {f.code}
                  {f.limit ? ` (${f.limit.name}: ${formatNumber(f.limit.limit)} a ${f.limit.period})` : ''}
                </td>
                <td class="num" data-label="Took">
                  {f.durationMs.toFixed(1)} ms
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {failures.data && failures.data.leftOut > 0 && (
        <p class="muted">{countOf(failures.data.leftOut, 'older failure')} not shown.</p>
      )}
    </>
  );
}
