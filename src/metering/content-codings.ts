import type { HeaderBag } from './unit-meter.js';

/**
 * The codings a `Content-Encoding` field names, in the order they were applied, in lower case;
 * `identity` (no coding) left out. The same list for a response the meter reads and a request body
 * read to decide on it.
 */
export function contentCodings(contentEncoding: HeaderBag[string]): string[] {
  if (contentEncoding === undefined) return [];
  return String(contentEncoding)
    .toLowerCase()
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding !== 'identity' && coding !== '');
}
