/** Who changed what: the audit log, newest first, filtered by action, target, actor and time, a page at a time. */
import { useDraft } from '../use-draft';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { api, ok } from '../api';
import { ListCount, Pager, usePagedApi } from '../components/pager';
import { formatTime, isoToUtcInput, utcInputToIso } from '../format';
import { href, hrefWith, navigate, type Route } from '../route';
import type { AuditEntry } from '../types';

const PAGE_SIZE = 50;

/**
 * The actions the API records, by target. Typed against the document's list: an action added there
 * fails the console's typecheck until it is offered here.
 */
const ACTIONS = Object.keys({
  'key.create': true,
  'key.update': true,
  'key.roll': true,
  'key.delete': true,
  'key.apply_plan': true,
  'key.remove_plan': true,
  'key.detach_consumer': true,
  'key.credits_add': true,
  'key.credits_set': true,
  'key.mint_token': true,
  'key.leak': true,
  'consumer.create': true,
  'consumer.update': true,
  'consumer.remove_plan': true,
  'consumer.delete': true,
  'consumer.credits_add': true,
  'consumer.credits_set': true,
  'plan.create': true,
  'plan.update': true,
  'plan.delete': true,
  'route.create': true,
  'route.update': true,
  'route.delete': true,
  'webhook.create': true,
  'webhook.update': true,
  'webhook.delete': true,
  'webhook.rotate_secret': true,
  'webhook.retry_delivery': true,
  'webhook.disable': true,
  'billing_export.create': true,
  'billing_export.update': true,
  'billing_export.delete': true,
  'billing_export.run': true,
  'admin_token.create': true,
  'admin_token.delete': true,
  'portal.update_settings': true,
  'portal.session_create': true,
  'portal.session_delete': true,
} satisfies Record<AuditEntry['action'], true>);

interface Filters {
  readonly action: string;
  readonly targetId: string;
  readonly actorId: string;
  readonly from: string;
  readonly to: string;
}

const FILTER_NAMES = ['action', 'targetId', 'actorId', 'from', 'to'] as const;

function filtersOf(query: URLSearchParams): Filters {
  return Object.fromEntries(FILTER_NAMES.map((name) => [name, query.get(name) ?? ''])) as unknown as Filters;
}

/** The target's name where its before or after carries one (keys, admin tokens), beside its id. */
function nameOf(entry: AuditEntry): string | undefined {
  for (const side of [entry.changes.after, entry.changes.before]) {
    const name = (side as { name?: unknown } | null)?.name;
    if (typeof name === 'string') return name;
  }
  return undefined;
}

const brief = (value: unknown) => {
  if (value === undefined) return '—';
  const text = JSON.stringify(value);
  return text.length > 40 ? text.slice(0, 39) + '…' : text;
};

/** What changed, field by field (`enabled: true → false`); a creation or deletion says so. */
function changeSummary(before: unknown, after: unknown): string[] {
  if (before === null || before === undefined) return ['created'];
  if (after === null || after === undefined) return ['deleted'];
  if (typeof before !== 'object' || typeof after !== 'object') return [`${brief(before)} → ${brief(after)}`];
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  const b = before as Record<string, unknown>;
  const a = after as Record<string, unknown>;
  return [...fields]
    .filter((f) => JSON.stringify(b[f]) !== JSON.stringify(a[f]))
    .map((f) => `${f}: ${brief(b[f])} → ${brief(a[f])}`);
}

/** The console's page of each type of target (a deleted target has none). */
const TARGET_PAGES: Readonly<Record<string, (id: string) => string>> = {
  key: (id) => href('keys', id),
  plan: (id) => href('plans', id, 'edit'),
  consumer: (id) => href('consumers', id),
  route: (id) => href('routes', id, 'edit'),
};

function Target({ entry }: { entry: AuditEntry }) {
  const { type, id } = entry.target;
  const name = nameOf(entry);
  const link = entry.action.endsWith('.delete') ? undefined : TARGET_PAGES[type]?.(id);
  return (
    <>
      {type} {link ? <a href={link}>{name ?? id}</a> : <span>{name ?? id}</span>}
      {name !== undefined && <div class="mono muted small">{id}</div>}
    </>
  );
}

function Actor({ entry }: { entry: AuditEntry }) {
  if (entry.actor.type === 'root') return <>root token</>;
  if (entry.actor.type === 'system') return <>Tollgate itself</>;
  if (entry.actor.type === 'portal')
    return (
      <>
        {entry.actor.name ?? entry.actor.id} <span class="muted small">in the portal, for</span>{' '}
        <span class="mono muted small">{entry.actor.consumerId}</span>
      </>
    );
  return (
    <>
      {entry.actor.name} <span class="mono muted small">{entry.actor.id}</span>
    </>
  );
}

function FilterForm({ filters }: { filters: Filters }) {
  const { draft, field } = useDraft({
    ...filters,
    from: isoToUtcInput(filters.from),
    to: isoToUtcInput(filters.to),
  });
  return (
    <form
      class="filters"
      role="search"
      aria-label="Filter the audit log"
      onSubmit={(e) => {
        e.preventDefault();
        navigate(
          hrefWith(href('audit'), {
            ...draft,
            from: draft.from ? (utcInputToIso(draft.from) ?? '') : '',
            to: draft.to ? (utcInputToIso(draft.to) ?? '') : '',
          }),
        );
      }}
    >
      <div class="field">
        <label for="a-action">Action</label>
        <select id="a-action" value={draft.action} onChange={field('action')}>
          <option value="">Any</option>
          {ACTIONS.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="a-target">Target id</label>
        <input id="a-target" value={draft.targetId} onInput={field('targetId')} />
      </div>
      <div class="field">
        <label for="a-actor">Actor (admin token id)</label>
        <input id="a-actor" value={draft.actorId} onInput={field('actorId')} />
      </div>
      <div class="field">
        <label for="a-from">From (UTC)</label>
        <input id="a-from" type="datetime-local" step="1" value={draft.from} onInput={field('from')} />
      </div>
      <div class="field">
        <label for="a-to">To (UTC)</label>
        <input id="a-to" type="datetime-local" step="1" value={draft.to} onInput={field('to')} />
      </div>
      <div class="field field-buttons">
        <button type="submit">Filter</button>
        <button type="button" class="secondary" onClick={() => navigate(href('audit'))}>
          Clear
        </button>
      </div>
    </form>
  );
}

export function AuditLogPage({ route }: { route: Route }) {
  const filters = filtersOf(route.query);
  const { cursors, page: log } = usePagedApi(
    (cursor, signal) =>
      ok(
        api.GET('/tollgate/audit-log', {
          params: { query: { ...filters, limit: PAGE_SIZE, cursor } },
          signal,
        }),
      ),
    JSON.stringify(filters),
    route,
  );
  return (
    <>
      <PageTitle title="Audit log" />
      <FilterForm filters={filters} />
      <ErrorMessage error={log.error} />
      {log.loading && !log.data && <p role="status">Loading the audit log…</p>}
      {log.data && (
        <>
          <ListCount
            cursors={cursors}
            page={log}
            rows={log.data.auditLog.length}
            size={PAGE_SIZE}
            noun={['entry', 'entries']}
          />
          {log.data.auditLog.length === 0 ? (
            <p role="status">No entry matches.</p>
          ) : (
            <table class="data audit">
              <caption class="visually-hidden">Audit log, newest first, page {cursors.pageNumber}</caption>
              <thead>
                <tr>
                  <th scope="col">Time (UTC)</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Changes</th>
                  <th scope="col">Client</th>
                </tr>
              </thead>
              <tbody>
                {log.data.auditLog.map((entry) => (
                  <tr key={entry.id} data-audit-id={entry.id}>
                    <td class="nowrap" data-label="Time (UTC)">
                      {formatTime(entry.time)}
                    </td>
                    <td data-label="Actor">
                      <Actor entry={entry} />
                    </td>
                    <td class="mono" data-label="Action">
                      {entry.action}
                    </td>
                    <td data-label="Target">
                      <Target entry={entry} />
                    </td>
                    <td data-label="Changes">
                      <ul class="plain">
                        {changeSummary(entry.changes.before, entry.changes.after).map((line) => (
                          <li key={line} class="mono small">
                            {line}
                          </li>
                        ))}
                      </ul>
                      <details>
                        <summary>Details</summary>
                        <p class="small">
                          Request <span class="mono">{entry.requestId}</span>
                        </p>
                        <div class="changes">
                          <figure>
                            <figcaption>Before</figcaption>
                            <pre class="mono">{JSON.stringify(entry.changes.before, null, 2)}</pre>
                          </figure>
                          <figure>
                            <figcaption>After</figcaption>
                            <pre class="mono">{JSON.stringify(entry.changes.after, null, 2)}</pre>
                          </figure>
                        </div>
                      </details>
                    </td>
                    <td class="mono" data-label="Client">
                      {entry.clientAddress}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Pager cursors={cursors} page={log} label="Audit log" />
        </>
      )}
    </>
  );
}
