/**
 * Which requests a plan's limit or cost applies to (decision record 0034): routes by id, methods, a
 * path prefix (with or without regard to case); every condition given must hold. As the form holds them (text as typed), and as the API
 * takes them (`matchOf`: undefined when no condition is given).
 */
import { HTTP_METHODS } from '../plans';
import type { RequestMatch } from '../types';
import { CheckboxGroup } from './checkbox-group';

type Method = (typeof HTTP_METHODS)[number];

export interface MatchDraft {
  /** Route ids, separated by commas or spaces. */
  readonly routeIds: string;
  readonly methods: readonly Method[];
  readonly pathPrefix: string;
  /** Sent only with a path prefix, the one thing it qualifies. */
  readonly caseInsensitive: boolean;
  /** A match on the request's JSON body: not edited here, kept as it is. */
  readonly body?: RequestMatch['body'];
}

export const NO_MATCH: MatchDraft = { routeIds: '', methods: [], pathPrefix: '', caseInsensitive: false };

export function draftOf(match: RequestMatch | undefined): MatchDraft {
  return {
    routeIds: match?.routeIds?.join(', ') ?? '',
    methods: match?.methods ?? [],
    pathPrefix: match?.pathPrefix ?? '',
    caseInsensitive: match?.caseInsensitive ?? false,
    ...(match?.body !== undefined && { body: match.body }),
  };
}

export function matchOf(draft: MatchDraft): RequestMatch | undefined {
  const routeIds = draft.routeIds.split(/[\s,]+/).filter((id) => id !== '');
  const match: RequestMatch = {
    ...(routeIds.length > 0 && { routeIds }),
    ...(draft.methods.length > 0 && { methods: [...draft.methods] }),
    ...(draft.pathPrefix.trim() !== '' && {
      pathPrefix: draft.pathPrefix.trim(),
      ...(draft.caseInsensitive && { caseInsensitive: true }),
    }),
    ...(draft.body !== undefined && { body: draft.body }),
  };
  return Object.keys(match).length > 0 ? match : undefined;
}

export function MatchFields({
  idPrefix,
  draft,
  routes,
  onChange,
}: {
  /** Makes each control's id unique on the page: `limit-0-match`. */
  idPrefix: string;
  draft: MatchDraft;
  /** Route ids to suggest. */
  routes: readonly string[];
  onChange: (draft: MatchDraft) => void;
}) {
  const id = (field: string) => `${idPrefix}-${field}`;
  return (
    <div class="match-fields">
      <div class="field">
        <label for={id('routes')}>Routes (ids)</label>
        <input
          id={id('routes')}
          list={id('route-options')}
          value={draft.routeIds}
          onInput={(e) => onChange({ ...draft, routeIds: e.currentTarget.value })}
          autocomplete="off"
        />
        <datalist id={id('route-options')}>
          {routes.map((r) => (
            <option key={r} value={r} />
          ))}
        </datalist>
      </div>
      <div class="field">
        <label for={id('path')}>Path prefix</label>
        <input
          id={id('path')}
          placeholder="/v1/search"
          maxLength={512}
          value={draft.pathPrefix}
          onInput={(e) => onChange({ ...draft, pathPrefix: e.currentTarget.value })}
        />
        <label class="checkbox">
          <input
            id={id('case-insensitive')}
            type="checkbox"
            checked={draft.caseInsensitive}
            onChange={(e) => onChange({ ...draft, caseInsensitive: e.currentTarget.checked })}
          />
          Ignore case
        </label>
      </div>
      <CheckboxGroup
        legend="Methods"
        options={HTTP_METHODS}
        chosen={draft.methods}
        onChange={(methods) => onChange({ ...draft, methods })}
      />
    </div>
  );
}
