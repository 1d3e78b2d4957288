/**
 * What both middlewares do with a request: read it as the proxy would, ask verify, and turn the answer
 * into the proxy's answer. The framework adapters (express.ts, fastify.ts) only write the outcome.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { TollgateConnection } from './connection.js';
import {
  admittedHeaders,
  invalidCustomerIdResponse,
  missingKeyResponse,
  refusalOf,
  type ProxyResponse,
} from './proxy-answer.js';
import { credentialOf, customerIdOf, hasControlCharacter, pathOf } from './proxy-request.js';
import { settleFromResponse, type ResponseSettling } from './settle.js';
import { verifyKey } from './verify.js';
import type { VerifyAnswer } from './verify-types.js';

export interface TollgateMiddlewareOptions extends TollgateConnection, Partial<ResponseSettling> {
  /** The header that names the end customer, Tollgate's CUSTOMER_ID_HEADER; default `x-customer-id`. */
  readonly customerIdHeader?: string;
  /** Milliseconds since the epoch, for the RateLimit header's seconds to reset; default `Date.now`. */
  readonly clock?: () => number;
  /**
   * For an API priced by what a call used: the units each request reserves (verify's `reserve`), or a
   * function of the request giving them (undefined: its plan's cost). With `settle`, the response the
   * handler sends is read for the units it used and the reservation settled at them.
   */
  readonly reserve?: number | ((request: IncomingRequest) => number | undefined);
  /**
   * What of the request's JSON body the plans read (verify's `body`: per-model limits with
   * `match.body`, a `reserve` from it), from the body the framework parsed, e.g. `(request) =>
   * request.body`; sent only when it is a JSON object. Express: mount its body parser before this middleware. Fastify: the request is then
   * decided in a preHandler hook, once its body is parsed, instead of onRequest.
   */
  readonly body?: (request: IncomingRequest) => unknown;
}

/** The request as the middleware sees it. */
export interface IncomingRequest {
  readonly headers: IncomingHttpHeaders;
  readonly method: string;
  /** The request target: path and query. */
  readonly url: string;
  /** The end client's address (the framework's, which honours its trust-proxy setting). */
  readonly clientAddress: string | undefined;
  /** Its body as the framework parsed it before the middleware ran; undefined: not parsed. */
  readonly body?: unknown;
}

export type GateOutcome =
  | {
      readonly admitted: true;
      readonly answer: VerifyAnswer;
      readonly headers: Readonly<Record<string, string>>;
    }
  | { readonly admitted: false; readonly answer: VerifyAnswer | undefined; readonly response: ProxyResponse };

/** Verifies one request; throws TollgateVerifyError when verify itself fails. */
export async function passGate(
  options: TollgateMiddlewareOptions,
  request: IncomingRequest,
): Promise<GateOutcome> {
  const key = credentialOf(request.headers);
  if (key === undefined) return { admitted: false, answer: undefined, response: missingKeyResponse() };
  const customerId = customerIdOf(
    request.headers,
    (options.customerIdHeader ?? 'x-customer-id').toLowerCase(),
  );
  if (customerId !== undefined && hasControlCharacter(customerId))
    return { admitted: false, answer: undefined, response: invalidCustomerIdResponse() };
  const host = request.headers.host;
  // A page's request names its origin: a key restricted to origins (or a token narrowed to some) is decided by it.
  const origin = request.headers.origin;
  const reserve = typeof options.reserve === 'function' ? options.reserve(request) : options.reserve;
  const picked = options.body?.(request);
  // Verify takes a JSON object: a body of any other kind is not what a plan's pointers read.
  const body = isObject(picked) ? picked : undefined;
  const answer = await verifyKey(options, {
    key,
    path: pathOf(request.url),
    method: request.method,
    // Routes may match a host: the one the request named, as the proxy would route it.
    ...(host !== undefined && host !== '' && { host }),
    ...(customerId !== undefined && { customerId }),
    ...(origin !== undefined && origin !== '' && { origin }),
    ...(request.clientAddress !== undefined && { clientAddress: request.clientAddress }),
    ...(reserve !== undefined && { reserve }),
    ...(body !== undefined && { body }),
  });
  if (!answer.valid) return { admitted: false, answer, response: refusalOf(answer) };
  return { admitted: true, answer, headers: admittedHeaders(answer, (options.clock ?? Date.now)()) };
}

/**
 * After an admitted request whose answer holds a reservation: with a `settle` rule, the response `res`
 * is read for the units it reports and the reservation settled at them once it has ended.
 */
export function settleAfter(
  options: TollgateMiddlewareOptions,
  outcome: GateOutcome,
  res: ServerResponse,
): void {
  const reservationId = outcome.admitted ? outcome.answer.reservationId : undefined;
  if (reservationId === undefined || options.settle === undefined) return;
  settleFromResponse(options, { ...options, settle: options.settle }, reservationId, res);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
