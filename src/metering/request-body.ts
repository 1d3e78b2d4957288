import type { Readable } from 'node:stream';
import { requestJson } from './request-json.js';

/** How much of a request body Tollgate reads to match or reserve on it (`BODY_MATCH_MAX_BYTES`). */
export const BODY_MATCH_MAX_BYTES_DEFAULT = 1024 * 1024;

/**
 * A request body read whole, to decide on it: `bytes` to forward unchanged, `json` its parse as its
 * backend reads it (undefined when it is not JSON; src/metering/request-json.ts), or `too-large`, its
 * bytes or what they decode to (the proxy answers 413 `body_too_large`).
 */
export type RequestBody = { kind: 'read'; bytes: Buffer; json: unknown } | { kind: 'too-large' };

/**
 * Reads `body` up to `maxBytes`. A declared `Content-Length` over the bound is refused before a byte is
 * read; otherwise reading stops at the first byte past it, leaving the rest unread and the stream
 * paused (the caller answers 413 and closes the connection); a body in a content coding is as large
 * as it decodes to. Rejects when the body fails (the client left).
 */
export function readRequestBody(
  body: Readable,
  maxBytes: number,
  /** Its `Content-Length` and `Content-Encoding` fields. */
  declared: { readonly length?: number; readonly encoding?: string } = {},
  /** Called once reading starts (never for a body declared too large): the proxy's `100 Continue`. */
  beforeReading?: () => void,
): Promise<RequestBody> {
  if (declared.length !== undefined && declared.length > maxBytes) {
    return Promise.resolve({ kind: 'too-large' });
  }
  beforeReading?.();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const stop = () => {
      body.off('data', onData).off('end', onEnd).off('error', onError);
      body.pause();
    };
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > maxBytes) {
        stop();
        resolve({ kind: 'too-large' });
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = () => {
      stop();
      resolve(bodyRead(Buffer.concat(chunks, length), maxBytes, declared.encoding));
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    body.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/** A whole body, `bytes` as they were sent, read to decide on it (`too-large` past `maxBytes`, decoded). */
export function bodyRead(bytes: Buffer, maxBytes: number, contentEncoding: string | undefined): RequestBody {
  if (bytes.length > maxBytes) return { kind: 'too-large' };
  const read = requestJson(bytes, contentEncoding, maxBytes);
  return read === 'too-large' ? { kind: 'too-large' } : { kind: 'read', bytes, json: read.json };
}
