/**
 * Cursor pagination: the API hands out `nextCursor`; the pages already seen are remembered so
 * "Previous" needs no cursor going backwards. Nothing beyond the page on screen is ever loaded.
 */
import { useState } from 'preact/hooks';
import { call, queryString, type Query } from '../api';
import { useApi, type Loaded } from '../use-api';

export interface Cursors {
  /** The cursor of the page on screen (undefined: the first page). */
  readonly cursor: string | undefined;
  readonly pageNumber: number;
  next(cursor: string): void;
  previous(): void;
  reset(): void;
}

/** The pages seen under one query; a new `query` (other filters) starts again at its first page. */
export function useCursors(query: string): Cursors {
  const [state, setState] = useState<{ query: string; stack: (string | undefined)[] }>({
    query,
    stack: [undefined],
  });
  const stack = state.query === query ? state.stack : [undefined];
  const setStack = (next: (string | undefined)[]) => setState({ query, stack: next });
  return {
    cursor: stack[stack.length - 1],
    pageNumber: stack.length,
    next: (cursor) => setStack([...stack, cursor]),
    previous: () => setStack(stack.length > 1 ? stack.slice(0, -1) : stack),
    reset: () => setStack([undefined]),
  };
}

/** One page of a list the API pages with `cursor`; other filters in `query` start again at page 1. */
export function usePagedApi<T>(
  path: string,
  query: Query,
): { readonly cursors: Cursors; readonly page: Loaded<T> } {
  const key = path + queryString(query);
  const cursors = useCursors(key);
  const page = useApi(
    (signal) => call<T>('GET', path, { query: { ...query, cursor: cursors.cursor }, signal }),
    [key, cursors.cursor],
  );
  return { cursors, page };
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
