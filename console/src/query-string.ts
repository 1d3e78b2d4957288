/** Query strings and path segments as the management API and the portal's API take them. */
import { ApiError } from './api-error';

export type Query = Record<string, string | number | boolean | undefined | null>;

/** `?a=1&b=x`, leaving out what is not set (an empty filter field filters nothing). */
export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : '?' + text;
}

/**
 * Path segments are ids the API handed out; encoded all the same. A dot segment would not name an id
 * at all (the browser resolves `/consumer-api-key/..` to `/`, which is the proxy): it never leaves.
 */
export function segment(id: string): string {
  if (id === '' || id === '.' || id === '..')
    throw new ApiError(0, 'invalid_id', `Nothing has the id “${id}”: it cannot be an id.`);
  return encodeURIComponent(id);
}
