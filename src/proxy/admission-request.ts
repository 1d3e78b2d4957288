/**
 * What admission (admission.ts) reads of a request, and what it decides with. Apart so that the
 * request context (request-context.ts) and the management API's deps name them without the decision.
 */
import type { IncomingMessage } from 'node:http';
import type { KeyCache } from '../keys/key-cache.js';
import type { LimitState, RateLimiter } from '../limits/rate-limiter.js';
import type { Logger } from '../ops/logger.js';
import type { FailureThrottle } from './auth-throttle.js';

/**
 * What the admission reads of a request: the proxy builds it from the HTTP request, verify from its
 * body (docs/guides/verify-and-client.md), so both decide the same way.
 */
export interface AdmissionRequest {
  /** Names it in the log lines of a failure (and so in its trace). */
  readonly requestId?: string;
  /** The credential presented; undefined: none. */
  readonly secret: string | undefined;
  /**
   * The client's address, canonical: where failed attempts are counted, and what a key's
   * `allowedAddresses` hold; undefined: not throttled, and refused by a key restricted to addresses.
   */
  readonly client: string | undefined;
  /** Its `Origin`: the page that sent it; undefined: none. */
  readonly origin: string | undefined;
  /** Its customer id (CUSTOMER_ID_HEADER, verify's `customerId`): whom a limit per customer counts; undefined: none. */
  readonly customerId?: string;
  /** Its `Referer`, whose origin stands for a missing `Origin` (read only for a key restricted to origins). */
  readonly referer?: string;
  /** The route the request takes, null for the catch-all; undefined: none takes it and there is no catch-all. */
  readonly routeId: string | null | undefined;
  readonly method: string;
  /** As sent, without the query. */
  readonly path: string;
  /** Units the request costs instead of its plans' costs (verify's `cost`). */
  readonly cost?: number;
  /** Units it reserves, settled by a later call (verify's `reserve`), capped at its cost entry's `settleMax`. */
  readonly reserve?: number;
  /** Verify's: every limit's state after the decision is pushed here, as the limiter reports it. */
  readonly states?: LimitState[];
  /**
   * The proxied request itself: when traced, a wait on the limiter is a span of its trace; its body is
   * read when a plan decides on it.
   */
  readonly incoming?: IncomingMessage;
  /**
   * A body that came with the question, for a plan that decides on it: as Envoy sent it along
   * (`with_request_body`), or parsed by the server that asks verify.
   */
  readonly body?: SentBody;
  /**
   * Sends `100 Continue` to a client that asked for it (`Expect: 100-continue`) and waits to send its
   * body: called when the body must be read to decide (an authenticated key, a declared size that fits).
   */
  readonly continueBody?: () => void;
}

/** A request's body as a gateway sent it along, or as the server asking verify parsed it. */
export type SentBody =
  | {
      readonly bytes: Buffer;
      /** Its `Content-Encoding`. */
      readonly contentEncoding: string | undefined;
      /** Its `Content-Type`: a charset named there may be refused (src/metering/request-charset.ts). */
      readonly contentType: string | undefined;
      /** Only its start came (a gateway's bound on what it buffers): past any bound a plan may read. */
      readonly partial: boolean;
    }
  | { readonly json: unknown };

export interface AdmissionDeps {
  readonly keyCache: KeyCache;
  readonly limiter: RateLimiter;
  readonly clock: () => number;
  /** Failed authentications per client address; absent: not throttled. */
  readonly authThrottle?: FailureThrottle;
  /** The most of a body read to match or reserve on it (BODY_MATCH_MAX_BYTES); absent: bodies are not read. */
  readonly bodyMatchMaxBytes?: number;
  /** Where a failure of the limiter or the key store is told, before it is answered 503. */
  readonly logger: Logger;
}
