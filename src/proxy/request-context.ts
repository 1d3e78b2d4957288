/**
 * One request as everything after `enter` (src/proxy/entry.ts) reads it: admission, the handler and
 * the WebSocket upgrade, `finished`, usage, the failure log and tracing. Built once, from the HTTP
 * request; another front (an external authorization check) can build the same facts from its own
 * message, so nothing here reads node:http (docs/decisions/0140-one-request-context.md).
 */
import type { Admitted, AdmissionRequest } from './admission.js';
import type { Forwarded, ForwardedFacts } from './forwarding-headers.js';
import type { RouteTarget } from './routing.js';

/** A request as it arrived: enough to answer and count one whose target is refused. */
export interface RequestArrival {
  readonly requestId: string;
  /** `performance.now()` when the request arrived. */
  readonly receivedAt: number;
  readonly method: string;
}

/**
 * A request whose target was accepted. It is what admission reads (`AdmissionRequest`): `secret` is
 * the credential presented, `client` the address the trusted proxies vouch for.
 */
export interface RequestContext extends RequestArrival, AdmissionRequest {
  readonly requestId: string;
  /** In normal form (plans/normalised-path.ts): matched, counted and forwarded so. */
  readonly path: string;
  /** `?…` or empty: forwarded as sent, never read. */
  readonly search: string;
  /** The route it takes, held until `finished` releases it; undefined: none, and no catch-all. */
  readonly route: RouteTarget | undefined;
  readonly forwarded: Forwarded;
  readonly client: string;
  /**
   * Whom usage and a limit per customer count: the token's `sub` once admission found one, else the
   * client's CUSTOMER_ID_HEADER.
   */
  customerId: string | undefined;
  /** A token's `sub`, set by `enter` after admission: the backend gets it as the customer id. */
  tokenSubject: string | undefined;
}

/** What Tollgate tells the backend of an admitted request, besides the client's own headers. */
export function backendFacts(
  context: RequestContext,
  admission: Admitted,
  customerIdHeader: string,
): ForwardedFacts {
  return {
    ...context.forwarded,
    secret: admission.secret,
    keyId: admission.key.id,
    requestId: context.requestId,
    customerIdHeader,
    tokenSubject: context.tokenSubject,
  };
}
