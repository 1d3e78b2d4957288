/** One webhook's delivery log, a page at a time: each event's state and the receiver's answer, and a retry. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { ListCount, Pager, usePagedApi } from '../components/pager';
import { formatNumber, formatTime } from '../format';
import { href, type Route } from '../route';
import type { Delivery } from '../types';
import { useAction, useApi } from '../use-api';

const PAGE_SIZE = 50;

/** What the receiver said at the last attempt: its status, or why there was no answer. */
function lastAnswer(d: Delivery): string {
  if (d.lastStatus !== null) return `HTTP ${d.lastStatus}`;
  return d.lastError ?? (d.lastAttemptAt === null ? 'not tried yet' : 'no answer');
}

export function WebhookDeliveriesPage({ webhookId, route }: { webhookId: string; route: Route }) {
  const webhook = useApi(
    (signal) => ok(api.GET('/tollgate/webhooks/{webhookId}', { params: { path: { webhookId } }, signal })),
    [webhookId],
  );
  const { cursors, page } = usePagedApi(
    (cursor, signal) =>
      ok(
        api.GET('/tollgate/webhooks/{webhookId}/deliveries', {
          params: { path: { webhookId }, query: { limit: PAGE_SIZE, cursor } },
          signal,
        }),
      ),
    webhookId,
    route,
  );
  const retry = useAction();
  const [message, setMessage] = useState('');
  const retryNow = async (d: Delivery) => {
    const done = await retry.run(() =>
      ok(
        api.POST('/tollgate/webhooks/{webhookId}/deliveries/{deliveryId}/retry', {
          params: { path: { webhookId, deliveryId: d.id } },
        }),
      ),
    );
    if (done) {
      setMessage(`The ${d.type} event is sent again now, with the same webhook-id.`);
      page.reload();
    }
  };
  return (
    <>
      <PageTitle title="Webhook deliveries" />
      <p>
        {webhook.data && <span class="mono">{webhook.data.url}</span>}{' '}
        <a href={href('webhooks')}>All webhooks</a>
      </p>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={webhook.error ?? page.error ?? retry.error} />
      {page.loading && !page.data && <p role="status">Loading deliveries…</p>}
      {page.data && (
        <>
          <ListCount
            cursors={cursors}
            page={page}
            rows={page.data.deliveries.length}
            size={PAGE_SIZE}
            noun={['delivery', 'deliveries']}
          />
          {page.data.deliveries.length === 0 ? (
            <p>Nothing was sent to this webhook yet.</p>
          ) : (
            <table class="data">
              <caption class="visually-hidden">Deliveries, page {cursors.pageNumber}</caption>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">State</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Created</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {page.data.deliveries.map((d) => (
                  <tr key={d.id} data-delivery-id={d.id}>
                    <td data-label="Event">
                      <span class="mono">{d.type}</span>
                      <div class="mono muted small">{d.eventId}</div>
                    </td>
                    <td data-label="State">
                      {d.state}
                      {d.nextAttemptAt && (
                        <div class="muted small">next try {formatTime(d.nextAttemptAt)}</div>
                      )}
                    </td>
                    <td class="num" data-label="Attempts">
                      {formatNumber(d.attempts)}
                    </td>
                    <td data-label="Last answer">{lastAnswer(d)}</td>
                    <td data-label="Created">{formatTime(d.createdAt)}</td>
                    <td class="row-actions">
                      <ScopedButton
                        scope="webhooks:write"
                        class="link"
                        disabled={retry.busy}
                        aria-label={`Retry now: ${d.type} ${d.id}`}
                        onClick={() => void retryNow(d)}
                      >
                        Retry now
                      </ScopedButton>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Pager cursors={cursors} page={page} label="Deliveries" />
        </>
      )}
    </>
  );
}
