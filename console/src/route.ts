/**
 * Pages live in the URL's fragment (`#/keys/key_…?enabled=false`): the server serves one index.html,
 * any other path under the console is a 404, and back, forward and bookmarks work. Never a token here.
 */
import { useEffect, useState } from 'preact/hooks';
import { queryString, type Query } from './query-string';

export interface Route {
  /** Decoded path segments: `#/keys/key_1` → ['keys', 'key_1']. */
  readonly segments: readonly string[];
  readonly query: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const text = hash.replace(/^#\/?/, '');
  const q = text.indexOf('?');
  const path = q === -1 ? text : text.slice(0, q);
  const segments = path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  return { segments, query: new URLSearchParams(q === -1 ? '' : text.slice(q + 1)) };
}

/** A link to a page: `href('keys', id)` → `#/keys/<id>`. */
export function href(...segments: string[]): string {
  return '#/' + segments.map(encodeURIComponent).join('/');
}

export function hrefWith(path: string, query: Query): string {
  return path + queryString(query);
}

export function navigate(to: string): void {
  location.hash = to.replace(/^#/, '');
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}
