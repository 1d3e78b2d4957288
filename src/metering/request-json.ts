/**
 * The JSON of a request body read to decide on it (`match.body`, `reserve`), read as the backends it
 * goes to read it: a per-model limit that a client could pass by sending the same request in a form
 * its backend reads and Tollgate does not would limit nothing (docs/decisions/0240). Express'
 * `express.json()` decodes a body in a content coding; Python's `json` reads UTF-16 and UTF-32 and the
 * bare words `NaN`, `Infinity` and `-Infinity` (src/metering/json-text.ts has the encodings).
 */
import { brotliDecompressSync, unzipSync, zstdDecompressSync } from 'node:zlib';
import { contentCodings, type CodingFormat } from './content-codings.js';
import { jsonText } from './json-text.js';

/** Its parse (undefined: not JSON), or decoded past the bound. */
export type RequestJson = { readonly json: unknown } | 'too-large';

type Decode = (bytes: Buffer, options: { maxOutputLength: number }) => Buffer;

const DECODERS: Readonly<Record<CodingFormat, Decode>> = {
  zlib: unzipSync,
  br: brotliDecompressSync,
  zstd: zstdDecompressSync,
};

/**
 * `bytes` decoded from its `Content-Encoding` (at most `maxBytes` decoded, else `too-large`), then
 * parsed. A body whose decoding is not JSON (a coding Tollgate does not decode, more than it undoes,
 * bytes not in that coding) is parsed as it came: Python's servers ignore the field, so a plain body
 * that names a coding is plain to them.
 */
export function requestJson(
  bytes: Buffer,
  contentEncoding: string | undefined,
  maxBytes: number,
): RequestJson {
  const decoded = decodedBody(bytes, contentEncoding, maxBytes);
  if (decoded === 'too-large') return decoded;
  const json = decoded === undefined ? undefined : parsed(jsonText(decoded));
  if (json !== undefined || decoded === bytes) return { json };
  return { json: parsed(jsonText(bytes)) };
}

/** `bytes` with its codings undone; undefined: it is not in them, as far as Tollgate can tell. */
function decodedBody(
  bytes: Buffer,
  contentEncoding: string | undefined,
  maxBytes: number,
): Buffer | 'too-large' | undefined {
  const codings = contentCodings(contentEncoding);
  if (codings === undefined) return undefined;
  let decoded = bytes;
  // The last coding applied is the first undone.
  for (const coding of codings.reverse()) {
    try {
      decoded = DECODERS[coding](decoded, { maxOutputLength: maxBytes });
    } catch (err) {
      return (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? 'too-large' : undefined;
    }
  }
  return decoded;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Rare: only then is the text scanned for the words Python reads as numbers.
    if (!/NaN|Infinity/.test(text)) return undefined;
    try {
      return JSON.parse(nonFiniteAsNull(text)) as unknown;
    } catch {
      return undefined;
    }
  }
}

const NON_FINITE = ['-Infinity', 'Infinity', 'NaN'];

/**
 * `NaN`, `Infinity` and `-Infinity` outside strings as `null`: where a `reserve` reads them, neither
 * counts as its integer, and a backend takes neither for one.
 */
function nonFiniteAsNull(text: string): string {
  let out = '';
  let copiedTo = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') {
      inString = true;
      continue;
    }
    const word = NON_FINITE.find((w) => text.startsWith(w, i));
    if (word === undefined) continue;
    out += text.slice(copiedTo, i) + 'null';
    i += word.length - 1;
    copiedTo = i + 1;
  }
  return out + text.slice(copiedTo);
}
