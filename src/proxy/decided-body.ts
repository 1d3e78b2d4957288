/**
 * The body a plan decides on (a `match.body`, a `reserve` from it), wherever it comes from: the proxy
 * reads its own request's (decision record 0192), Envoy's `Check` sends it along (decision record 0241),
 * a server asking verify sends its parse (decision record 0242). Read as its backend reads it
 * (src/metering/request-json.ts).
 */
import type { IncomingMessage } from 'node:http';
import { namesOtherCharset } from '../metering/request-charset.js';
import { bodyRead, readRequestBody, type RequestBody } from '../metering/request-body.js';
import type { AdmissionRequest } from './admission-request.js';

/**
 * Its parse, and the bytes the proxy forwards as they came (none: the gateway or the server has them);
 * or past the bound (413); or in a charset its backend may read otherwise (415, decision record 0245);
 * or never read whole, its client gone.
 */
export type DecidedBody =
  | { readonly json: unknown; readonly forwarded: Buffer | undefined }
  | 'too-large'
  | 'other-charset'
  | 'client-gone';

/** The body of `request` to decide on, at most `maxBytes`; undefined: it has none to read. */
export function decidedBody(
  request: AdmissionRequest,
  maxBytes: number,
): DecidedBody | Promise<DecidedBody> | undefined {
  const incoming = request.incoming;
  // A WebSocket upgrade has none: its socket is the connection's.
  if (incoming !== undefined && incoming.headers.upgrade === undefined) {
    // Refused before a byte is read, whatever the bytes: the backend reads them in that charset.
    if (namesOtherCharset(incoming.headers['content-type'])) return 'other-charset';
    return readIncoming(request, incoming, maxBytes);
  }
  const sent = request.body;
  if (sent === undefined) return undefined;
  if ('json' in sent) return { json: sent.json, forwarded: undefined };
  if (namesOtherCharset(sent.contentType)) return 'other-charset';
  // A cut body would pass a per-model limit the whole one meets.
  if (sent.partial) return 'too-large';
  return decided(bodyRead(sent.bytes, maxBytes, sent.contentEncoding), false);
}

async function readIncoming(
  request: AdmissionRequest,
  incoming: IncomingMessage,
  maxBytes: number,
): Promise<DecidedBody> {
  const length = incoming.headers['content-length'];
  let read: RequestBody;
  try {
    read = await readRequestBody(
      incoming,
      maxBytes,
      {
        length: length === undefined ? undefined : Number(length),
        encoding: incoming.headers['content-encoding'],
      },
      request.continueBody,
    );
  } catch {
    // Only the client's connection fails a read: it closed, or broke the body off.
    return 'client-gone';
  }
  return decided(read, true);
}

function decided(read: RequestBody, forwards: boolean): DecidedBody {
  if (read.kind === 'too-large') return 'too-large';
  return { json: read.json, forwarded: forwards ? read.bytes : undefined };
}
