import type { HeaderBag } from './unit-meter.js';

/**
 * The most codings a body is undone from: each costs a decoder's start on the process's one thread,
 * and a field of thousands of `gzip` over a body wrapped as many times held it for half a second.
 * One is what servers send; Express' `express.json()` undoes only one.
 */
const MAX_CODINGS = 3;

/**
 * The codings a `Content-Encoding` field names, in the order they were applied, in lower case;
 * `identity` (no coding) left out; undefined past MAX_CODINGS (the body is not read). The same list
 * for a response the meter reads and a request body read to decide on it.
 */
export function contentCodings(contentEncoding: HeaderBag[string]): string[] | undefined {
  if (contentEncoding === undefined) return [];
  const codings = String(contentEncoding)
    .toLowerCase()
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding !== 'identity' && coding !== '');
  return codings.length > MAX_CODINGS ? undefined : codings;
}
