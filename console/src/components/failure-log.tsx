/**
 * A key's or a consumer's failed requests, from the failure log (docs/guides/failures.md): newest
 * first, filtered by code or found by request id (both held in the address beside the page's cursors),
 * with how many failures were counted but not kept, and the same as the API's CSV.
 */
import { useState } from 'preact/hooks';
import { NeedsScope, useAccess } from '../access';
import { api, ok } from '../api';
import { AS_CSV } from '../download';
import { formatNumber, formatTime } from '../format';
import { pastedSecret } from '../pasted-secret';
import { href, hrefWith, navigate, type Route } from '../route';
import type { Failure } from '../types';
import { useDraft } from '../use-draft';
import { CsvButton } from './csv-button';
import { ErrorMessage } from './error-message';
import { ListCount, Pager, usePagedApi } from './pager';

const PAGE_SIZE = 50;
/** The CSV holds the filters' newest failures from the page on screen on, as many as the API answers at once. */
const CSV_ROWS = 1_000;

/** The codes a failure carries (docs/guides/failures.md), refusals first, then what the backend did. */
const CODES = [
  'rate_limit_exceeded',
  'credits_exhausted',
  'key_disabled',
  'key_expired',
  'route_not_allowed',
  'origin_not_allowed',
  'address_not_allowed',
  'backend_error',
  'backend_client_error',
  'backend_unreachable',
  'gateway_timeout',
  'client_closed',
] as const;

export type FailureScope =
  { readonly kind: 'key'; readonly id: string } | { readonly kind: 'consumer'; readonly id: string };

interface Filters {
  readonly failureCode: string;
  readonly requestId: string;
}

/** One page of the scope's failures (the API's query); with `AS_CSV` the answer is the CSV's Blob. */
function loadFailures(scope: FailureScope, query: object, options: object) {
  return scope.kind === 'key'
    ? ok(
        api.GET('/consumer-api-key/{consumerApiKeyId}/failures', {
          params: { path: { consumerApiKeyId: scope.id }, query },
          ...options,
        }),
      )
    : ok(
        api.GET('/tollgate/consumers/{consumerId}/failures', {
          params: { path: { consumerId: scope.id }, query },
          ...options,
        }),
      );
}

function FilterForm({ filters, route }: { filters: Filters; route: Route }) {
  const { draft, field } = useDraft(filters);
  const [refused, setRefused] = useState(false);
  // The other parts of the page's address stay (the usage range); the cursors start again.
  const show = (next: Partial<Filters>) =>
    navigate(
      hrefWith(href(...route.segments), { ...Object.fromEntries(route.query), cursors: undefined, ...next }),
    );
  return (
    <form
      class="filters"
      role="search"
      aria-label="Filter the failures"
      onSubmit={(e) => {
        e.preventDefault();
        // A key's secret pasted here is not a request id: it never goes into the address.
        const secret = pastedSecret(draft.requestId).kind !== 'none';
        setRefused(secret);
        if (!secret) show({ failureCode: draft.failureCode, requestId: draft.requestId.trim() });
      }}
    >
      <div class="field">
        <label for="failure-code">Code</label>
        <select id="failure-code" value={draft.failureCode} onChange={field('failureCode')}>
          <option value="">Any</option>
          {CODES.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="failure-request-id">Request id</label>
        <input
          id="failure-request-id"
          value={draft.requestId}
          onInput={field('requestId')}
          aria-invalid={refused ? 'true' : undefined}
          aria-describedby={refused ? 'failure-request-id-error' : undefined}
          autocomplete="off"
        />
      </div>
      <div class="field field-buttons">
        <button type="submit">Filter</button>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            setRefused(false);
            show({ failureCode: undefined, requestId: undefined });
          }}
        >
          Clear
        </button>
      </div>
      {refused && (
        <p id="failure-request-id-error" class="error" role="alert">
          That is a key’s secret, not a request id: it is not searched for. A request id is the x-request-id
          header of the answer.
        </p>
      )}
    </form>
  );
}

/** `hourly: 100 per hour (consumer)`. */
const limitText = (limit: NonNullable<Failure['limit']>) =>
  `${limit.name}: ${formatNumber(limit.limit)} per ${limit.period} (${limit.scope})`;

function FailureRow({ failure, withKey }: { failure: Failure; withKey: boolean }) {
  return (
    <tr data-request-id={failure.requestId}>
      <td class="nowrap" data-label="Time (UTC)">
        <time dateTime={failure.time}>{formatTime(failure.time)}</time>
      </td>
      <td class="mono" data-label="Request id">
        {failure.requestId}
      </td>
      {withKey && (
        <td class="mono" data-label="Key">
          <a href={href('keys', failure.consumerApiKeyId)}>{failure.consumerApiKeyId}</a>
        </td>
      )}
      <td data-label="Request">
        <span class="mono">
          {failure.method} {failure.path}
        </span>
        <div class="muted small">route {failure.routeId ?? '(catch-all)'}</div>
      </td>
      <td data-label="Status and code">
        {failure.status} <span class="mono">{failure.code}</span>
      </td>
      <td data-label="Limit">{failure.limit ? limitText(failure.limit) : '—'}</td>
      <td data-label="Client and customer">
        <span class="mono">{failure.clientAddress ?? '—'}</span>
        {failure.customerId !== null && <div class="small">customer {failure.customerId}</div>}
      </td>
      <td class="num" data-label="Duration">
        {formatNumber(Math.round(failure.durationMs))} ms
      </td>
    </tr>
  );
}

function FailureList({ scope, route }: { scope: FailureScope; route: Route }) {
  const filters: Filters = {
    failureCode: route.query.get('failureCode') ?? '',
    requestId: route.query.get('requestId') ?? '',
  };
  const query = { code: filters.failureCode || undefined, requestId: filters.requestId || undefined };
  const { cursors, page } = usePagedApi(
    (cursor, signal) => loadFailures(scope, { ...query, limit: PAGE_SIZE, cursor }, { signal }),
    JSON.stringify([scope, filters]),
    route,
  );
  const rows = page.data?.failures ?? [];
  const noun = scope.kind === 'key' ? 'this key' : 'this consumer’s keys';
  return (
    <>
      <p class="help">
        Every request of {noun} that failed (refused, or the backend failed), newest first, kept 7 days by
        default (FAILURE_LOG_RETENTION_DAYS); at most 100 per key per minute, the rest counted.
      </p>
      <FilterForm filters={filters} route={route} />
      <div class="toolbar">
        <button type="button" class="secondary" onClick={page.reload}>
          Refresh
        </button>
        <CsvButton
          load={() =>
            loadFailures(
              scope,
              { ...query, limit: CSV_ROWS, cursor: cursors.cursor },
              AS_CSV,
            ) as unknown as Promise<Blob>
          }
          name={`failures-${scope.id}`}
        />
      </div>
      <ErrorMessage error={page.error} />
      {page.loading && !page.data && <p role="status">Loading the failures…</p>}
      {page.data && (
        <>
          <p class="left-out" data-left-out={page.data.leftOut}>
            {page.data.leftOut === 0
              ? 'Left out: none. Every failure of these filters is kept.'
              : `Left out: ${formatNumber(page.data.leftOut)} more ${page.data.leftOut === 1 ? 'failure was' : 'failures were'} counted but not kept (past 100 per key per minute).`}
          </p>
          <ListCount
            cursors={cursors}
            page={page}
            rows={rows.length}
            size={PAGE_SIZE}
            noun={['failure', 'failures']}
          />
          {rows.length === 0 ? (
            <p role="status">No failure matches.</p>
          ) : (
            <table class="data failures">
              <caption class="visually-hidden">
                Failed requests, newest first, page {cursors.pageNumber}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Time (UTC)</th>
                  <th scope="col">Request id</th>
                  {scope.kind === 'consumer' && <th scope="col">Key</th>}
                  <th scope="col">Request</th>
                  <th scope="col">Status and code</th>
                  <th scope="col">Limit</th>
                  <th scope="col">Client and customer</th>
                  <th scope="col" class="num">
                    Duration
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((f) => (
                  <FailureRow key={f.requestId + f.time} failure={f} withKey={scope.kind === 'consumer'} />
                ))}
              </tbody>
            </table>
          )}
          <Pager cursors={cursors} page={page} label="Failed requests" />
        </>
      )}
    </>
  );
}

export function FailureLog({ scope, route }: { scope: FailureScope; route: Route }) {
  return (
    <section aria-labelledby="failures-title">
      <h2 id="failures-title">Failed requests</h2>
      {useAccess().lacks('usage:read') ? (
        <NeedsScope scope="usage:read" what="The failure log" />
      ) : (
        <FailureList scope={scope} route={route} />
      )}
    </section>
  );
}
