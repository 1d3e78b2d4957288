/**
 * The key list: one page of keys at a time (cursor pagination: 100,000 keys cost what 50 do), newest
 * first unless another order is chosen (last use, 24-hour traffic; applied as it is chosen, as the page
 * size is, with the filters already applied: never the search field's text), filtered by the API and
 * counted by it, each with its state, plan, last use and a 24-hour sparkline fetched for the visible rows only.
 * The search field takes a name (any case), a key id, or a pasted secret: a secret is sent in a
 * request body to the API's lookup and never reaches the address bar.
 */
import { useEffect, useState } from 'preact/hooks';
import { ScopedLink, useAccess } from '../access';
import { api, ApiError, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { KeyStatus } from '../components/key-status';
import { PageTitle } from '../components/page-title';
import { ListCount, Pager, usePagedApi } from '../components/pager';
import { Sparkline } from '../components/sparkline';
import { formatTime, relativeTime } from '../format';
import { handOff, useHandoff } from '../handoff';
import { href, hrefWith, navigate, type Route } from '../route';
import type { operations } from '../api-types';
import type { KeyLookup, ListKeysResponse, UsageBucket } from '../types';
import { useAction, useApi } from '../use-api';
import { useDraft } from '../use-draft';
import { pastedSecret } from '../pasted-secret';

const PAGE_SIZES = [25, 50, 100] as const;
/** Sparkline requests in flight at once: the page stays responsive and the API is not flooded. */
const SPARKLINE_CONCURRENCY = 4;

type KeyListQuery = NonNullable<operations['listConsumerApiKeys']['parameters']['query']>;
type Sort = NonNullable<KeyListQuery['sort']>;

/** The orders offered, the console's default first: a key just created is at the top. */
const SORTS: readonly { readonly id: Sort; readonly label: string }[] = [
  { id: '-createdAt', label: 'Newest first' },
  { id: 'createdAt', label: 'Oldest first' },
  { id: '-lastUsedAt', label: 'Used most recently' },
  { id: 'lastUsedAt', label: 'Unused the longest' },
  { id: '-requests24h', label: 'Most requests, 24 hours' },
  { id: 'requests24h', label: 'Fewest requests, 24 hours' },
];
const DEFAULT_SORT: Sort = '-createdAt';

const PARTIAL_SECRET =
  'This looks like part of a secret (tg_ and 43 characters): paste the whole secret. It was not searched for, so it is in no address.';
/** A key id as create hands them out. */
const KEY_ID = /^key_[A-Za-z0-9_-]{1,64}$/;

type Sparklines = ReadonlyMap<string, readonly UsageBucket[] | ApiError>;

/** The last 24 hours of each listed key, hour by hour, a few requests at a time. */
function useSparklines(ids: readonly string[], allowed: boolean): Sparklines {
  const [lines, setLines] = useState<Sparklines>(new Map());
  const joined = ids.join(',');
  useEffect(() => {
    const controller = new AbortController();
    const found = new Map<string, readonly UsageBucket[] | ApiError>();
    setLines(new Map());
    if (!allowed) return;
    const queue = [...ids];
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          const usage = await ok(
            api.GET('/consumer-api-key/{consumerApiKeyId}/usage', {
              params: { path: { consumerApiKeyId: id }, query: { granularity: 'hour' } },
              signal: controller.signal,
            }),
          );
          found.set(id, usage.buckets);
        } catch (err) {
          if (controller.signal.aborted) return;
          found.set(id, err instanceof ApiError ? err : new ApiError(0, 'console_error', String(err)));
        }
        setLines(new Map(found));
      }
    };
    void Promise.all(Array.from({ length: SPARKLINE_CONCURRENCY }, worker));
    return () => controller.abort();
  }, [joined, allowed]);
  return lines;
}

interface Filters {
  /** The start of the name, any case. */
  readonly name: string;
  readonly enabled: string;
  readonly rateLimitId: string;
  readonly externalId: string;
  readonly sort: Sort;
  readonly size: number;
}

const NO_FILTERS: Filters = {
  name: '',
  enabled: '',
  rateLimitId: '',
  externalId: '',
  sort: DEFAULT_SORT,
  size: 50,
};

function filtersOf(query: URLSearchParams): Filters {
  const size = Number(query.get('size'));
  const sort = query.get('sort');
  return {
    name: query.get('name') ?? '',
    enabled: query.get('enabled') ?? '',
    rateLimitId: query.get('rateLimitId') ?? '',
    externalId: query.get('externalId') ?? '',
    sort: SORTS.find((s) => s.id === sort)?.id ?? DEFAULT_SORT,
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 50,
  };
}

/** What the page after a lookup says of the secret it was found by. */
function foundBy(found: KeyLookup): string {
  return found.matched === 'current'
    ? `Found by its secret: the key ${found.apiKey.name}, whose current secret it is.`
    : `Found by its secret: the key ${found.apiKey.name}, whose previous secret it is (before its last roll), ` +
        `working until ${formatTime(found.previousSecretExpiresAt)}.`;
}

function FilterForm({ filters, plans }: { filters: Filters; plans: readonly string[] }) {
  const { draft, field } = useDraft(filters);
  // What was typed, for the name the address holds: a new name there (a search applied, back or
  // forward) shows in the field. Derived, not set by an effect, which would run after the first paint
  // and empty what was typed before it.
  const [typed, setTyped] = useState({ name: filters.name, text: filters.name });
  const search = typed.name === filters.name ? typed.text : filters.name;
  const setSearch = (text: string) => setTyped({ name: filters.name, text });
  const finding = useAction();
  const apply = (next: Filters) =>
    navigate(
      hrefWith(href('keys'), {
        ...next,
        sort: next.sort === DEFAULT_SORT ? undefined : next.sort,
        size: next.size === 50 ? undefined : next.size,
      }),
    );
  const submit = async (event: Event) => {
    event.preventDefault();
    const text = search.trim();
    const pasted = pastedSecret(text);
    if (pasted.kind === 'partial') {
      // Part of a secret is as secret as the whole: it goes nowhere, and the field is emptied.
      setSearch('');
      finding.fail(PARTIAL_SECRET);
      return;
    }
    if (pasted.kind === 'secret') {
      // A secret stays out of the address, the history and the field: it goes in a body, once.
      setSearch('');
      const found = await finding.run(() =>
        ok(api.POST('/tollgate/keys/lookup', { body: { secret: pasted.secret } })),
      );
      if (found) {
        handOff({ message: foundBy(found) });
        navigate(href('keys', found.apiKey.consumerApiKeyId));
      }
      return;
    }
    if (KEY_ID.test(text)) {
      const byId = await finding.run(() =>
        ok(
          api.GET('/consumer-api-key/{consumerApiKeyId}', { params: { path: { consumerApiKeyId: text } } }),
        ).catch((err: unknown) => {
          // No key has that id: it may be the start of a name.
          if (err instanceof ApiError && err.code === 'key_not_found') return undefined;
          throw err;
        }),
      );
      if (byId) {
        navigate(href('keys', byId.consumerApiKeyId));
        return;
      }
      if (finding.error) return;
    }
    apply({ ...draft, name: text });
  };
  return (
    <form class="filters" role="search" aria-label="Find keys" onSubmit={(e) => void submit(e)}>
      <div class="field field-wide">
        <label for="f-search">Name, key id or secret</label>
        <input
          id="f-search"
          type="search"
          autocomplete="off"
          spellcheck={false}
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
          aria-describedby="f-search-help"
        />
        <p id="f-search-help" class="help">
          A name matches from its start, in any case. A pasted secret, even with what surrounded it (Bearer,
          quotes, a header’s name), finds its key without entering the address.
        </p>
      </div>
      <div class="field">
        <label for="f-enabled">State</label>
        <select id="f-enabled" value={draft.enabled} onChange={field('enabled')}>
          <option value="">Any</option>
          <option value="true">Enabled</option>
          <option value="false">Disabled</option>
        </select>
      </div>
      <div class="field">
        <label for="f-plan">Plan</label>
        <input id="f-plan" list="f-plan-options" value={draft.rateLimitId} onInput={field('rateLimitId')} />
        <datalist id="f-plan-options">
          {plans.map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
      </div>
      <div class="field">
        <label for="f-external">External ID</label>
        <input id="f-external" value={draft.externalId} onInput={field('externalId')} />
      </div>
      <div class="field">
        <label for="f-sort">Order</label>
        <select
          id="f-sort"
          value={draft.sort}
          onChange={(e) => apply({ ...filters, sort: e.currentTarget.value as Sort })}
        >
          {SORTS.map((s) => (
            <option key={s.id} value={s.id}>
              {s.label}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="f-size">Per page</label>
        <select
          id="f-size"
          value={String(draft.size)}
          onChange={(e) => apply({ ...filters, size: Number(e.currentTarget.value) })}
        >
          {PAGE_SIZES.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </div>
      <div class="field field-buttons">
        <button type="submit" disabled={finding.busy}>
          Search
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            setSearch('');
            finding.clear();
            apply(NO_FILTERS);
          }}
        >
          Clear
        </button>
      </div>
      <ErrorMessage error={finding.error} />
    </form>
  );
}

export function KeyListPage({ route }: { route: Route }) {
  const filters = filtersOf(route.query);
  const query: KeyListQuery = {
    limit: filters.size,
    name: filters.name || undefined,
    enabled: filters.enabled === '' ? undefined : filters.enabled === 'true',
    rateLimitId: filters.rateLimitId || undefined,
    externalId: filters.externalId || undefined,
    sort: filters.sort,
    count: true,
  };
  const { cursors, page: keys } = usePagedApi(
    (cursor, signal) => ok(api.GET('/consumer-api-key', { params: { query: { ...query, cursor } }, signal })),
    JSON.stringify(query),
    route,
  );
  // What the page before said as it came here (a key deleted).
  const { message } = useHandoff();
  const { lacks } = useAccess();
  // Plan names for the filter's suggestions; without plans:read the field still takes any id.
  const plans = useApi(
    (signal) =>
      lacks('plans:read')
        ? Promise.resolve(undefined)
        : ok(api.GET('/rate-limit', { params: { query: { limit: 1000 } }, signal })).catch(() => undefined),
    [lacks('plans:read')],
  );
  const rows: ListKeysResponse['apiKeys'] = keys.data?.apiKeys ?? [];
  const sparklines = useSparklines(
    rows.map((k) => k.consumerApiKeyId),
    !lacks('usage:read'),
  );
  return (
    <>
      <PageTitle title="Keys">
        <ScopedLink scope="keys:write" href={href('keys', 'new')}>
          Create key
        </ScopedLink>
      </PageTitle>
      <p class="status-message" role="status">
        {message}
      </p>
      <FilterForm filters={filters} plans={plans.data?.rateLimits.map((p) => p.rateLimitId) ?? []} />
      <ErrorMessage error={keys.error} />
      {keys.loading && <p role="status">Loading keys…</p>}
      {keys.data && (
        <>
          <ListCount
            cursors={cursors}
            page={keys}
            rows={rows.length}
            size={filters.size}
            total={keys.data.total}
            noun={['key', 'keys']}
          />
          {rows.length === 0 ? (
            <p role="status">No key matches.</p>
          ) : (
            <table class="data keys" aria-busy={keys.loading}>
              <caption class="visually-hidden">
                Keys, {SORTS.find((s) => s.id === filters.sort)!.label.toLowerCase()}, page{' '}
                {cursors.pageNumber}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Plan</th>
                  <th scope="col">External ID</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last 24 hours</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((k) => {
                  const line = sparklines.get(k.consumerApiKeyId);
                  return (
                    <tr key={k.consumerApiKeyId} data-key-id={k.consumerApiKeyId}>
                      <td data-label="Name">
                        <a href={href('keys', k.consumerApiKeyId)}>{k.name}</a>
                        <div class="mono muted small">{k.consumerApiKeyId}</div>
                      </td>
                      <td data-label="Status">
                        <KeyStatus keyState={k} />
                      </td>
                      <td data-label="Plan">{k.rateLimitId ?? <span class="muted">none</span>}</td>
                      <td data-label="External ID">{k.externalId ?? <span class="muted">—</span>}</td>
                      <td data-label="Last used">
                        <time dateTime={k.lastUsedAt ?? undefined}>{relativeTime(k.lastUsedAt)}</time>
                      </td>
                      <td data-label="Created">{formatTime(k.createdAt)}</td>
                      <td class="sparkline-cell" data-label="Last 24 hours">
                        {lacks('usage:read') ? (
                          <span class="muted">needs usage:read</span>
                        ) : line === undefined ? (
                          <span class="muted">…</span>
                        ) : line instanceof ApiError ? (
                          <span class="muted">
                            {line.code === 'insufficient_scope' ? 'needs usage:read' : 'unavailable'}
                          </span>
                        ) : (
                          <Sparkline buckets={line} />
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
          <Pager cursors={cursors} page={keys} label="Keys" />
        </>
      )}
    </>
  );
}
