import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { TrustProxy } from '../config.js';
import { canonicalAddress } from '../net/canonical-address.js';

/**
 * Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus the ones Tollgate
 * sets itself: none of these is copied from the client to the backend.
 */
const NOT_COPIED = new Set([
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // The backend gets the secret in x-api-key, never the consumer's Authorization.
  'authorization',
  'x-api-key',
  'x-consumer-api-key-id',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  // RFC 7239's form of the same facts: a client could spoof it, and Tollgate speaks X-Forwarded-*.
  'forwarded',
  'x-request-id',
  // The pool sets Host for the backend; the client's goes out as X-Forwarded-Host.
  'host',
  // Tollgate answers `100-continue` itself once the request is admitted, and streams the body on.
  'expect',
]);

/** Hop-by-hop headers of a backend response, not passed to the client. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Header names listed in `Connection` (RFC 9110 §7.6.1): hop-by-hop for this message only. */
function connectionTokens(value: string | string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const tokens = (Array.isArray(value) ? value.join(',') : value).toLowerCase().split(',');
  for (let i = 0; i < tokens.length; i++) tokens[i] = tokens[i]!.trim();
  return tokens;
}

export interface ForwardedFacts {
  readonly secret: string;
  readonly keyId: string;
  readonly requestId: string;
  readonly forwardedFor: string;
  readonly forwardedProto: string;
  readonly forwardedHost: string | undefined;
  /** CUSTOMER_ID_HEADER: the header a token's `sub` replaces. */
  readonly customerIdHeader?: string;
  /** A token's `sub`, sent as the customer id in place of the client's. */
  readonly tokenSubject?: string | undefined;
}

/**
 * The headers for the backend as undici's flat `[name, value, …]` list: the client's end-to-end
 * headers, then Tollgate's. `keep` names hop-by-hop headers to pass through anyway (a WebSocket
 * upgrade needs `connection` and `upgrade`).
 */
export function backendHeaders(
  headers: IncomingHttpHeaders,
  facts: ForwardedFacts,
  keep?: ReadonlySet<string>,
): string[] {
  const named = connectionTokens(headers.connection);
  const replaced = facts.tokenSubject === undefined ? undefined : facts.customerIdHeader;
  const out: string[] = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || name === replaced) continue;
    if (keep?.has(name) !== true) {
      if (NOT_COPIED.has(name) || name.startsWith('proxy-') || named?.includes(name) === true) continue;
    }
    if (Array.isArray(value)) for (const v of value) out.push(name, v);
    else out.push(name, value);
  }
  out.push(
    'x-api-key',
    facts.secret,
    'x-consumer-api-key-id',
    facts.keyId,
    'x-request-id',
    facts.requestId,
    'x-forwarded-for',
    facts.forwardedFor,
    'x-forwarded-proto',
    facts.forwardedProto,
  );
  if (facts.forwardedHost !== undefined) out.push('x-forwarded-host', facts.forwardedHost);
  // Its UTF-8 as the header's bytes, as customerIdOf reads them.
  if (replaced !== undefined) out.push(replaced, Buffer.from(facts.tokenSubject!).toString('latin1'));
  return out;
}

/**
 * Whether the client accepts trailers (`TE: trailers`, RFC 9110 §10.1.4): then the backend is asked for
 * them and its `Trailer` field and trailers are passed on; every other `TE` value stays hop-by-hop.
 */
export function acceptsTrailers(headers: IncomingHttpHeaders): boolean {
  const te = headers.te;
  if (te === undefined) return false;
  return (Array.isArray(te) ? te.join(',') : te)
    .toLowerCase()
    .split(',')
    .some((t) => t.trim().split(';')[0] === 'trailers');
}

/**
 * A backend response head as Node's flat `[name, value, …]` list for `writeHead`, built in one pass
 * over undici's raw header list: hop-by-hop headers (and those its `Connection` names) are left out,
 * `Trailer` kept when `trailers` (the client accepts them), and so are the ones Tollgate sets itself
 * (`x-request-id`; the RateLimit fields when `ownLimit`).
 * Names keep the backend's spelling; values keep their bytes (latin1 both ways).
 */
export function responseHeaders(raw: readonly Buffer[], ownLimit: boolean, trailers = false): string[] {
  const out: string[] = [];
  let connection: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1');
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) && !(trailers && lower === 'trailer')) {
      if (lower === 'connection')
        connection =
          connection === undefined
            ? raw[i + 1]!.toString('latin1')
            : connection + ',' + raw[i + 1]!.toString('latin1');
      continue;
    }
    if (lower === 'x-request-id' || lower.startsWith('proxy-')) continue;
    if (ownLimit && (lower === 'ratelimit' || lower === 'ratelimit-policy')) continue;
    out.push(name, raw[i + 1]!.toString('latin1'));
  }
  // `Connection: keep-alive` / `close` name nothing else; any other token is a header to drop too.
  if (connection !== undefined && !/^\s*(?:keep-alive|close)\s*$/i.test(connection)) {
    const named = connectionTokens(connection)!;
    let kept = 0;
    for (let i = 0; i < out.length; i += 2) {
      if (named.includes(out[i]!.toLowerCase())) continue;
      out[kept++] = out[i]!;
      out[kept++] = out[i + 1]!;
    }
    out.length = kept;
  }
  return out;
}

const REQUEST_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

/** The client's `x-request-id` when it is a sane token, else a fresh one. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

export type Forwarded = Pick<ForwardedFacts, 'forwardedFor' | 'forwardedProto' | 'forwardedHost'> & {
  /** The client's address as far as the trusted proxies vouch for it. */
  readonly client: string;
};

function trusts(trust: TrustProxy, address: string, hop: number): boolean {
  return 'hops' in trust ? hop < trust.hops : trust.addresses.includes(address);
}

/**
 * The `X-Forwarded-*` facts for the backend. `X-Forwarded-For` keeps only the entries vouched for by
 * trusted proxies (by hop count or by address, `TRUST_PROXY`), so a client can't plant an address
 * beyond them; the first entry is the client as far as Tollgate can tell.
 */
export function forwardedFacts(req: IncomingMessage, trust: TrustProxy): Forwarded {
  const peer = canonicalAddress(req.socket.remoteAddress ?? '');
  const ownProto = (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
  const host = req.headers.host;
  if (!trusts(trust, peer, 0))
    return { client: peer, forwardedFor: peer, forwardedProto: ownProto, forwardedHost: host };

  const header = req.headers['x-forwarded-for'];
  const chain = header === undefined ? [] : (Array.isArray(header) ? header.join(',') : header).split(',');
  // Walk from the nearest hop outwards while each address is vouched for by a trusted proxy.
  let first = chain.length;
  let hop = 0;
  let current = peer;
  while (first > 0 && trusts(trust, current, hop)) {
    first--;
    hop++;
    current = canonicalAddress(chain[first]!.trim());
  }
  const vouched = chain.slice(first).map((a) => canonicalAddress(a.trim()));
  vouched.push(peer);

  const proto = req.headers['x-forwarded-proto'];
  const forwardedProto =
    typeof proto === 'string' && /^https?$/i.test(proto.trim()) ? proto.trim().toLowerCase() : ownProto;
  const fwdHost = req.headers['x-forwarded-host'];
  return {
    client: vouched[0]!,
    forwardedFor: vouched.join(', '),
    forwardedProto,
    forwardedHost: typeof fwdHost === 'string' && fwdHost !== '' ? fwdHost : host,
  };
}

/** A byte Node read as one Latin-1 character that is not ASCII. */
const NON_ASCII = /[\x80-\xff]/;

/**
 * The `CUSTOMER_ID_HEADER` value that groups usage by customer; absent or empty: none. Node reads header
 * bytes as Latin-1, one character a byte; clients send UTF-8, so a value with bytes beyond ASCII is read
 * again as UTF-8, and a sequence that is not UTF-8 becomes U+FFFD (decision record 0022).
 */
export function customerIdOf(headers: IncomingHttpHeaders, header: string): string | undefined {
  const value = headers[header];
  if (typeof value !== 'string' || value === '') return undefined;
  return NON_ASCII.test(value) ? Buffer.from(value, 'latin1').toString('utf8') : value;
}
