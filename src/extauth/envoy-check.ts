/**
 * `envoy.service.auth.v3.Authorization/Check`: Envoy's ext_authz filter over gRPC. The request is
 * read from `attributes.request.http` and `attributes.source.address`, decided as the proxy decides
 * (gateway-decision.ts), and answered with `ok_response` (headers for the backend, RateLimit for the
 * client) or `denied_response` (the proxy's status, headers and body).
 */
import { performance } from 'node:perf_hooks';
import { canonicalAddress } from '../net/canonical-address.js';
import type { SentBody } from '../proxy/admission-request.js';
import { credentialOf } from '../proxy/credential.js';
import { customerIdOf, requestIdOf } from '../proxy/forwarding-headers.js';
import { decide, type ExtauthDeps, type GatewayRequest } from './gateway-decision.js';

/** The fields of a CheckRequest read here (envoy/service/auth/v3/attribute_context.proto). */
export interface CheckRequest {
  readonly attributes?: {
    readonly source?: { readonly address?: { readonly socket_address?: { readonly address?: string } } };
    readonly request?: {
      readonly http?: {
        readonly method?: string;
        /** Lower-case names. */
        readonly headers?: Readonly<Record<string, string>>;
        /** The request target: path and query. */
        readonly path?: string;
        readonly host?: string;
        /** Its body, sent with `with_request_body`: as text, or as bytes with `pack_as_bytes`. */
        readonly body?: string;
        readonly raw_body?: Uint8Array;
      };
    };
  };
}

interface HeaderValueOption {
  readonly header: { readonly key: string; readonly value: string };
  readonly append_action: 'OVERWRITE_IF_EXISTS_OR_ADD';
}

export interface CheckResponse {
  /** google.rpc.Status: 0 OK, else why it was denied. */
  readonly status: { readonly code: number; readonly message?: string };
  readonly ok_response?: {
    readonly headers: HeaderValueOption[];
    readonly headers_to_remove: string[];
    readonly response_headers_to_add: HeaderValueOption[];
  };
  readonly denied_response?: {
    readonly status: { readonly code: number };
    readonly headers: HeaderValueOption[];
    readonly body: string;
  };
}

/** gRPC status codes (google/rpc/code.proto) of a denial, by the proxy's HTTP status. */
const DENIED_CODES: Readonly<Record<number, number>> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  413: 3, // INVALID_ARGUMENT: a body past BODY_MATCH_MAX_BYTES
  429: 8, // RESOURCE_EXHAUSTED
  503: 14, // UNAVAILABLE
};

const option = (key: string, value: string): HeaderValueOption => ({
  header: { key, value },
  append_action: 'OVERWRITE_IF_EXISTS_OR_ADD',
});

/** A string Envoy gave, or undefined for none: proto3 reads a string absent from the wire as "". */
const given = (value: string | undefined): string | undefined => (value === '' ? undefined : value);

/** The client's request as Envoy describes it. */
export function checkedRequest(
  check: CheckRequest,
  customerIdHeader: string,
  receivedAt: number,
): GatewayRequest {
  const http = check.attributes?.request?.http ?? {};
  const headers = http.headers ?? {};
  const address = given(check.attributes?.source?.address?.socket_address?.address);
  return {
    requestId: requestIdOf(headers),
    receivedAt,
    method: (given(http.method) ?? 'GET').toUpperCase(),
    target: given(http.path) ?? '/',
    host: given(http.host) ?? headers[':authority'] ?? headers.host,
    client: address === undefined ? undefined : canonicalAddress(address),
    secret: credentialOf(headers),
    origin: headers.origin,
    referer: headers.referer,
    customerId: customerIdOf(headers, customerIdHeader),
    body: sentBody(http, headers),
  };
}

/**
 * The body Envoy sent along (`with_request_body`), bytes as they came with `pack_as_bytes`;
 * `x-envoy-auth-partial-body: true` says it is only its start (`allow_partial_message`).
 */
function sentBody(
  http: NonNullable<NonNullable<NonNullable<CheckRequest['attributes']>['request']>['http']>,
  headers: Readonly<Record<string, string>>,
): SentBody | undefined {
  const raw = http.raw_body;
  // An empty body is no body: proto3 puts neither on the wire.
  const text = given(http.body);
  const bytes =
    raw !== undefined && raw.byteLength > 0
      ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
      : text !== undefined
        ? Buffer.from(text)
        : undefined;
  if (bytes === undefined) return undefined;
  return {
    bytes,
    contentEncoding: headers['content-encoding'],
    contentType: headers['content-type'],
    partial: headers['x-envoy-auth-partial-body'] === 'true',
  };
}

/** `gone()`: the call will not be answered (`decide`). */
export async function check(
  deps: ExtauthDeps,
  request: CheckRequest,
  gone: () => boolean,
): Promise<CheckResponse> {
  const decision = await decide(
    deps,
    'check',
    checkedRequest(request, deps.config.customerIdHeader, performance.now()),
    gone,
  );
  if (decision.admitted)
    return {
      status: { code: 0 },
      ok_response: {
        headers: decision.upstream.map(([name, value]) => option(name, value)),
        // The backend gets the key in x-api-key, never the client's Authorization, as from the proxy.
        headers_to_remove: ['authorization'],
        response_headers_to_add: decision.limitHeaders.map(([name, value]) => option(name, value)),
      },
    };
  const { status, headers, body } = decision.answer;
  const denied: HeaderValueOption[] = [];
  for (const name in headers) if (name !== 'content-length') denied.push(option(name, String(headers[name])));
  return {
    status: {
      code: DENIED_CODES[status] ?? 7,
      message: decision.admission?.code ?? 'invalid_request_target',
    },
    denied_response: { status: { code: status }, headers: denied, body },
  };
}
