import type { HeaderBag } from './unit-meter.js';

/** What undoes a coding: zlib's inflate takes gzip and zlib-wrapped deflate, what `deflate` names in HTTP. */
export type CodingFormat = 'zlib' | 'br' | 'zstd';

const FORMATS: Readonly<Record<string, CodingFormat>> = {
  gzip: 'zlib',
  'x-gzip': 'zlib',
  deflate: 'zlib',
  br: 'br',
  zstd: 'zstd',
};

/**
 * The most codings a body is undone from: each costs a decoder's start on the process's one thread,
 * and a field of thousands of `gzip` over a body wrapped as many times held it for half a second.
 * One is what servers send; Express' `express.json()` undoes only one.
 */
const MAX_CODINGS = 3;

/**
 * How to undo the codings a `Content-Encoding` field names, in the order they were applied (`identity`,
 * no coding, left out); undefined for a coding Tollgate does not decode, or past MAX_CODINGS. The same
 * for a response the meter reads and a request body read to decide on it.
 */
export function contentCodings(contentEncoding: HeaderBag[string]): CodingFormat[] | undefined {
  if (contentEncoding === undefined) return [];
  const names = String(contentEncoding)
    .toLowerCase()
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding !== 'identity' && coding !== '');
  if (names.length > MAX_CODINGS) return undefined;
  const formats = names.map((name) => (Object.hasOwn(FORMATS, name) ? FORMATS[name] : undefined));
  return formats.every((format) => format !== undefined) ? (formats as CodingFormat[]) : undefined;
}
