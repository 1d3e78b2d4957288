/** One billing export's runs, newest first: what each sent and what failed, and a run started by hand. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { BillingRunDetails, runProblem } from '../components/billing-run-details';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { Pager, usePagedApi } from '../components/pager';
import { formatNumber, formatTime } from '../format';
import { href, type Route } from '../route';
import { useAction, useApi } from '../use-api';

const PAGE_SIZE = 20;

export function BillingExportRunsPage({ exportId, route }: { exportId: string; route: Route }) {
  const billingExport = useApi(
    (signal) =>
      ok(
        api.GET('/tollgate/billing-exports/{billingExportId}', {
          params: { path: { billingExportId: exportId } },
          signal,
        }),
      ),
    [exportId],
  );
  const { cursors, page } = usePagedApi(
    (cursor, signal) =>
      ok(
        api.GET('/tollgate/billing-exports/{billingExportId}/runs', {
          params: { path: { billingExportId: exportId }, query: { limit: PAGE_SIZE, cursor } },
          signal,
        }),
      ),
    exportId,
    route,
  );
  const run = useAction();
  const [message, setMessage] = useState('');
  const runNow = async () => {
    const done = await run.run(() =>
      ok(
        api.POST('/tollgate/billing-exports/{billingExportId}/runs', {
          params: { path: { billingExportId: exportId } },
        }),
      ),
    );
    if (done) {
      const skipped = done.skippedSubjects.length;
      setMessage(
        `The run sent ${formatNumber(done.delivered)} of ${formatNumber(done.planned)} planned, ` +
          `${formatNumber(done.failed)} failed` +
          (skipped > 0 ? `; ${formatNumber(skipped)} skipped for want of a customer id.` : '.'),
      );
      page.reload();
    }
  };
  const subject = billingExport.data?.subject ?? 'key';
  return (
    <>
      <PageTitle title="Billing export runs">
        <ScopedButton scope="billing:write" disabled={run.busy} onClick={() => void runNow()}>
          Run now
        </ScopedButton>
      </PageTitle>
      <p>
        {billingExport.data && (
          <>
            {billingExport.data.type} to <span class="mono">{billingExport.data.url}</span>
            {billingExport.data.streamUrl && (
              <>
                {' '}
                (stream <span class="mono">{billingExport.data.streamUrl}</span>)
              </>
            )}
            .{' '}
          </>
        )}
        <a href={href('billing-exports')}>All billing exports</a>
      </p>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={billingExport.error ?? page.error ?? run.error} />
      {page.loading && !page.data && <p role="status">Loading runs…</p>}
      {page.data && (
        <>
          {page.data.runs.length === 0 ? (
            <p>No run has sent anything yet.</p>
          ) : (
            <table class="data">
              <caption class="visually-hidden">Runs, page {cursors.pageNumber}</caption>
              <thead>
                <tr>
                  <th scope="col">Started</th>
                  <th scope="col">By</th>
                  <th scope="col">Closed before</th>
                  <th scope="col" class="num">
                    Planned
                  </th>
                  <th scope="col" class="num">
                    Delivered
                  </th>
                  <th scope="col" class="num">
                    Failed
                  </th>
                  <th scope="col">Problem</th>
                  <th scope="col">What it sent</th>
                </tr>
              </thead>
              <tbody>
                {page.data.runs.map((r) => (
                  <tr key={r.id} data-run-id={r.id}>
                    <td data-label="Started">{formatTime(r.startedAt)}</td>
                    <td data-label="By">{r.startedBy === 'manual' ? 'by hand' : 'schedule'}</td>
                    <td data-label="Closed before">{formatTime(r.closedBefore)}</td>
                    <td class="num" data-label="Planned">
                      {formatNumber(r.planned)}
                    </td>
                    <td class="num" data-label="Delivered">
                      {formatNumber(r.delivered)}
                    </td>
                    <td class="num" data-label="Failed">
                      {formatNumber(r.failed)}
                    </td>
                    <td data-label="Problem">{runProblem(r, subject)}</td>
                    <td data-label="What it sent">
                      <BillingRunDetails
                        run={r}
                        subject={subject}
                        customerField={billingExport.data?.customerField ?? null}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Pager cursors={cursors} page={page} label="Runs" />
        </>
      )}
    </>
  );
}
