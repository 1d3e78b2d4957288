/**
 * The key list: one page of keys at a time (cursor pagination: 100,000 keys cost what 50 do), filtered
 * by the API, each with its state, plan, last use and a 24-hour sparkline fetched for the visible rows only.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, segment } from '../api';
import { ErrorMessage } from '../components/error-message';
import { KeyStatus } from '../components/key-status';
import { PageTitle } from '../components/page-title';
import { ListCount, Pager, usePagedApi } from '../components/pager';
import { Sparkline } from '../components/sparkline';
import { formatTime, relativeTime } from '../format';
import { useHandoff } from '../handoff';
import { href, hrefWith, navigate, type Route } from '../route';
import type { KeyUsageResponse, ListKeysResponse, PlanList, UsageBucket } from '../types';
import { useApi } from '../use-api';
import { useDraft } from '../use-draft';

const PAGE_SIZES = [25, 50, 100] as const;
/** Sparkline requests in flight at once: the page stays responsive and the API is not flooded. */
const SPARKLINE_CONCURRENCY = 4;

type Sparklines = ReadonlyMap<string, readonly UsageBucket[] | ApiError>;

/** The last 24 hours of each listed key, hour by hour, a few requests at a time. */
function useSparklines(ids: readonly string[]): Sparklines {
  const [lines, setLines] = useState<Sparklines>(new Map());
  const joined = ids.join(',');
  useEffect(() => {
    const controller = new AbortController();
    const found = new Map<string, readonly UsageBucket[] | ApiError>();
    setLines(new Map());
    const queue = [...ids];
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          const usage = await call<KeyUsageResponse>('GET', `/consumer-api-key/${segment(id)}/usage`, {
            query: { granularity: 'hour' },
            signal: controller.signal,
          });
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
  }, [joined]);
  return lines;
}

interface Filters {
  readonly namePrefix: string;
  readonly enabled: string;
  readonly rateLimitId: string;
  readonly externalId: string;
  readonly size: number;
}

function filtersOf(query: URLSearchParams): Filters {
  const size = Number(query.get('size'));
  return {
    namePrefix: query.get('namePrefix') ?? '',
    enabled: query.get('enabled') ?? '',
    rateLimitId: query.get('rateLimitId') ?? '',
    externalId: query.get('externalId') ?? '',
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 50,
  };
}

function FilterForm({ filters, plans }: { filters: Filters; plans: readonly string[] }) {
  const { draft, setDraft, field } = useDraft(filters);
  const apply = (next: Filters) =>
    navigate(hrefWith(href('keys'), { ...next, size: next.size === 50 ? undefined : next.size }));
  return (
    <form
      class="filters"
      role="search"
      aria-label="Filter keys"
      onSubmit={(e) => {
        e.preventDefault();
        apply(draft);
      }}
    >
      <div class="field">
        <label for="f-name">Name starts with</label>
        <input id="f-name" type="search" value={draft.namePrefix} onInput={field('namePrefix')} />
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
        <label for="f-size">Per page</label>
        <select
          id="f-size"
          value={String(draft.size)}
          onChange={(e) => setDraft({ ...draft, size: Number(e.currentTarget.value) })}
        >
          {PAGE_SIZES.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </div>
      <div class="field field-buttons">
        <button type="submit">Search</button>
        <button
          type="button"
          class="secondary"
          onClick={() => apply({ namePrefix: '', enabled: '', rateLimitId: '', externalId: '', size: 50 })}
        >
          Clear
        </button>
      </div>
    </form>
  );
}

export function KeyListPage({ route }: { route: Route }) {
  const filters = filtersOf(route.query);
  const { cursors, page: keys } = usePagedApi<ListKeysResponse>(
    '/consumer-api-key',
    {
      limit: filters.size,
      namePrefix: filters.namePrefix,
      enabled: filters.enabled,
      rateLimitId: filters.rateLimitId,
      externalId: filters.externalId,
    },
    route,
  );
  // What the page before said as it came here (a key deleted).
  const { message } = useHandoff();
  // Plan names for the filter's suggestions; without plans:read the field still takes any id.
  const plans = useApi(
    (signal) =>
      call<PlanList>('GET', '/rate-limit', { query: { limit: 1000 }, signal }).catch(() => undefined),
    [],
  );
  const rows = keys.data?.apiKeys ?? [];
  const sparklines = useSparklines(rows.map((k) => k.consumerApiKeyId));
  return (
    <>
      <PageTitle title="Keys">
        <a class="button" href={href('keys', 'new')}>
          Create key
        </a>
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
            noun={['key', 'keys']}
          />
          {rows.length === 0 ? (
            <p role="status">No key matches.</p>
          ) : (
            <table class="data keys" aria-busy={keys.loading}>
              <caption class="visually-hidden">Keys, page {cursors.pageNumber}</caption>
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
                        {line === undefined ? (
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
