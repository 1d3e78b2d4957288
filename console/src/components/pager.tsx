/**
 * Cursor pagination: the API hands out `nextCursor`; the cursors of the pages before the one on
 * screen live in the URL (`cursors=`), so a reload or a shared link stays on the page and "Previous"
 * needs no cursor going backwards. Nothing beyond the page on screen is ever loaded.
 */
import { formatNumber } from '../format';
import { href, hrefWith, navigate, type Route } from '../route';
import { useApi, type Loaded } from '../use-api';

/** The route's parameter: the cursors that led to the page on screen, oldest first, dot-separated. */
const TRAIL = 'cursors';

export interface Cursors {
  /** The cursor of the page on screen (undefined: the first page). */
  readonly cursor: string | undefined;
  readonly pageNumber: number;
  next(cursor: string): void;
  previous(): void;
}

/** The page the route names. A filter form navigates without the trail: other filters start at page 1. */
export function useCursors(route: Route): Cursors {
  // Cursors are base64url: a dot never occurs in one.
  const trail = (route.query.get(TRAIL) ?? '').split('.').filter((c) => c !== '');
  const go = (next: readonly string[]) =>
    navigate(
      hrefWith(href(...route.segments), {
        ...Object.fromEntries(route.query),
        [TRAIL]: next.length > 0 ? next.join('.') : undefined,
      }),
    );
  return {
    cursor: trail[trail.length - 1],
    pageNumber: trail.length + 1,
    next: (cursor) => go([...trail, cursor]),
    previous: () => go(trail.slice(0, -1)),
  };
}

/**
 * One page of a list the API pages with `cursor`, the page the route names. `load` reads the page after
 * `cursor` (undefined: the first); `key` names the list (its query): a new key starts at page 1.
 */
export function usePagedApi<T>(
  load: (cursor: string | undefined, signal: AbortSignal) => Promise<T>,
  key: string,
  route: Route,
): { readonly cursors: Cursors; readonly page: Loaded<T> } {
  const cursors = useCursors(route);
  const page = useApi((signal) => load(cursors.cursor, signal), [key, cursors.cursor]);
  return { cursors, page };
}

/**
 * Which rows of the list are on screen and how many there are: as the API counted them (`total`, the
 * key list's `count=true`: exact, or "more than" past its bound), or else as far as the pages read so
 * far tell ("51–100 of more than 100" until the last page is reached).
 */
export function ListCount({
  cursors,
  page,
  rows,
  size,
  total,
  noun,
}: {
  cursors: Cursors;
  page: Loaded<{ readonly nextCursor?: string }>;
  rows: number;
  size: number;
  total?: { readonly count: number; readonly exact: boolean };
  noun: readonly [singular: string, plural: string];
}) {
  if (page.loading || rows === 0) return null;
  const first = (cursors.pageNumber - 1) * size + 1;
  const last = first + rows - 1;
  const more = page.data?.nextCursor !== undefined;
  const count =
    total !== undefined
      ? (total.exact ? '' : 'more than ') + formatNumber(total.count)
      : more
        ? `more than ${formatNumber(last)}`
        : formatNumber(last);
  const text =
    first === 1 && !more
      ? `${formatNumber(rows)} ${rows === 1 ? noun[0] : noun[1]}`
      : `${noun[1][0]!.toUpperCase() + noun[1].slice(1)} ${formatNumber(first)}–${formatNumber(last)} of ${count}`;
  return <p class="list-count">{text}</p>;
}

/** While a page loads both buttons wait: the next cursor on screen is still the previous page's. */
export function Pager({
  cursors,
  page,
  label,
}: {
  cursors: Cursors;
  page: Loaded<{ readonly nextCursor?: string }>;
  label: string;
}) {
  const nextCursor = page.loading ? undefined : page.data?.nextCursor;
  return (
    <nav class="pager" aria-label={`${label} pages`} aria-busy={page.loading ? 'true' : 'false'}>
      <button
        type="button"
        class="secondary"
        disabled={page.loading || cursors.pageNumber === 1}
        onClick={cursors.previous}
      >
        Previous page
      </button>
      <span aria-live="polite">Page {cursors.pageNumber}</span>
      <button
        type="button"
        class="secondary"
        disabled={nextCursor === undefined}
        onClick={() => nextCursor && cursors.next(nextCursor)}
      >
        Next page
      </button>
    </nav>
  );
}
