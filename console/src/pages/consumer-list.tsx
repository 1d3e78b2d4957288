/** The consumers, a page at a time, found by any part of their name or external id, in any case. */
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { ListCount, Pager, usePagedApi } from '../components/pager';
import { formatNumber, formatTime } from '../format';
import { useHandoff } from '../handoff';
import { href, hrefWith, navigate, type Route } from '../route';
import { ScopedLink } from '../access';
import { api, ok } from '../api';
import { useDraft } from '../use-draft';

const PAGE_SIZE = 50;

export function ConsumerListPage({ route }: { route: Route }) {
  const search = route.query.get('search') ?? '';
  const { draft, field } = useDraft({ search });
  const { cursors, page } = usePagedApi(
    (cursor, signal) =>
      ok(
        api.GET('/tollgate/consumers', {
          params: { query: { limit: PAGE_SIZE, search: search || undefined, cursor } },
          signal,
        }),
      ),
    search,
    route,
  );
  const { message } = useHandoff();
  return (
    <>
      <PageTitle title="Consumers">
        <ScopedLink scope="keys:write" href={href('consumers', 'new')}>
          Create consumer
        </ScopedLink>
      </PageTitle>
      <p class="status-message" role="status">
        {message}
      </p>
      <form
        class="filters"
        role="search"
        aria-label="Consumers"
        onSubmit={(event) => {
          event.preventDefault();
          navigate(hrefWith(href('consumers'), { search: draft.search.trim() }));
        }}
      >
        <div class="field">
          <label for="consumer-search">Name or external ID</label>
          <input
            id="consumer-search"
            type="search"
            value={draft.search}
            onInput={field('search')}
            aria-describedby="consumer-search-help"
          />
          <p id="consumer-search-help" class="help">
            Any part of either, in any case.
          </p>
        </div>
        <div class="field-buttons">
          <button type="submit">Search</button>
        </div>
      </form>
      <ErrorMessage error={page.error} />
      {page.loading && !page.data && <p role="status">Loading consumers…</p>}
      {page.data && (
        <>
          <ListCount
            cursors={cursors}
            page={page}
            rows={page.data.consumers.length}
            size={PAGE_SIZE}
            noun={['consumer', 'consumers']}
          />
          {page.data.consumers.length === 0 ? (
            <p>{search ? 'No consumer’s name or external ID holds that.' : 'No consumer yet.'}</p>
          ) : (
            <table class="data">
              <caption class="visually-hidden">Consumers, page {cursors.pageNumber}</caption>
              <thead>
                <tr>
                  <th scope="col">Consumer</th>
                  <th scope="col">External ID</th>
                  <th scope="col">Plan</th>
                  <th scope="col" class="num">
                    Keys
                  </th>
                  <th scope="col" class="num">
                    Credits
                  </th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {page.data.consumers.map((c) => (
                  <tr key={c.consumerId} data-consumer-id={c.consumerId}>
                    <td data-label="Consumer">
                      <a href={href('consumers', c.consumerId)}>{c.name}</a>
                    </td>
                    <td data-label="External ID">{c.externalId ?? '—'}</td>
                    <td data-label="Plan">
                      {c.rateLimitId === null ? (
                        '—'
                      ) : (
                        <a href={href('plans', c.rateLimitId, 'edit')}>{c.rateLimitId}</a>
                      )}
                    </td>
                    <td class="num" data-label="Keys">
                      {formatNumber(c.keyCount)}
                    </td>
                    <td class="num" data-label="Credits" data-credits>
                      {c.credits === null ? '—' : formatNumber(c.credits.remaining)}
                    </td>
                    <td data-label="Created">{formatTime(c.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Pager cursors={cursors} page={page} label="Consumers" />
        </>
      )}
    </>
  );
}
