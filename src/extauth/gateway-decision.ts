/**
 * A gateway's question, "may this request pass?", answered with the proxy's own admission
 * (src/proxy/admission.ts) and counted in usage as the proxy counts a request. Each front
 * (forward auth, Envoy's Check, its rate limit service) reads the request its own way into a
 * `GatewayRequest` and writes the decision its own way (docs/guides/external-authorization.md).
 */
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import { errorResponse } from '../errors.js';
import type { Metrics } from '../ops/metrics.js';
import { normalisedPath } from '../plans/normalised-path.js';
import { admit, type Admitted, type AdmissionDeps, type Refused } from '../proxy/admission.js';
import { addHeaders, corsHeaders } from '../proxy/cors.js';
import type { SentBody } from '../proxy/admission-request.js';
import { countDecision, type KeyUseDeps } from '../proxy/key-use.js';
import type { Reservations } from '../reservations/reservations.js';
import { addLimitHeaders } from '../proxy/rate-limit-headers.js';
import { refusalResponse, type RefusalResponse } from '../proxy/refusal-response.js';
import { hasDotSegment, originForm } from '../proxy/request-target.js';
import type { Routing } from '../proxy/routing.js';

export type ExtauthProtocol = 'forward_auth' | 'check' | 'should_rate_limit';

export interface ExtauthDeps extends AdmissionDeps, KeyUseDeps {
  readonly routing: Pick<Routing, 'routeIdOf' | 'corsOf' | 'unroutedCors'>;
  readonly metrics: Pick<Metrics, 'extauthDecisions'>;
  readonly config: Pick<Config, 'customerIdHeader'>;
  /** Counts each decision, and keeps its reservation or places until the settle call. */
  readonly reservations: Pick<Reservations, 'counted'>;
}

/** The client's request as the gateway describes it. */
export interface GatewayRequest {
  readonly requestId: string;
  /** `performance.now()` when the call arrived. */
  readonly receivedAt: number;
  readonly method: string;
  /** Its path as the client sent it, the query included or not; undefined: the gateway gave none. */
  readonly target: string | undefined;
  /**
   * The gateway named its method or path twice, differently (forward auth's two conventions, one
   * likely a client's own passed through): refused as a target the proxy would refuse.
   */
  readonly conflicting?: boolean;
  /** Its host, which routes may match; undefined: none. */
  readonly host: string | undefined;
  /** The client's address, canonical; undefined: unknown (not throttled, refused by an address restriction). */
  readonly client: string | undefined;
  readonly secret: string | undefined;
  readonly origin: string | undefined;
  readonly referer: string | undefined;
  readonly customerId: string | undefined;
  /** Units it costs in place of its plans' costs (the rate limit service's `hits_addend`). */
  readonly cost?: number;
  /** Its body, when the gateway sent it along (Envoy's Check): for a plan that decides on it. */
  readonly body?: SentBody;
}

/**
 * The longest target (path and query) a gateway may name: about what Node's default limit on a
 * request's head lets a request line to the proxy carry.
 */
const MAX_TARGET_LENGTH = 8_192;
/**
 * The characters a request line to the proxy carries in its target: visible ASCII. Anything else (a
 * space, a control character, a byte past 0x7E, as Node reads a header's raw UTF-8 as latin1) is a
 * target no client could send the proxy, and would be kept garbled in usage.
 */
const TARGET_CHARACTERS = /^[\x21-\x7e]*$/;
/** A method as a request line to the proxy may carry one (a token, RFC 9110), after upper-casing. */
const METHOD = /^[-!#$%&'*+.^_`|~0-9A-Z]{1,32}$/;

/**
 * The path of the gateway's request in normal form, as the proxy reads a request line: its origin
 * form (request-target.ts), refused (null) when the proxy would refuse it or its parser never pass
 * it (a character outside visible ASCII, a head too long), undefined when the gateway named none. A
 * gateway's header or gRPC call can carry any string, and the path is kept in usage and the failure log.
 */
function pathOf({ target, host }: GatewayRequest): string | null | undefined {
  if (target === undefined) return undefined;
  if (target.length > MAX_TARGET_LENGTH || !TARGET_CHARACTERS.test(target)) return null;
  const origin = originForm(target, host);
  const path = origin === undefined ? undefined : normalisedPath(origin.path);
  return path === undefined || hasDotSegment(path) ? null : path;
}

/** Usage files a decision whose gateway named no path under this endpoint. */
export const NO_PATH_ENDPOINT = '(gateway)';

export type GatewayDecision =
  | {
      readonly admitted: true;
      readonly admission: Admitted;
      /** For the gateway to add to the request it forwards, `[name, value]`, names in lower case. */
      readonly upstream: [string, string][];
      /** RateLimit and RateLimit-Policy, for the client's answer; empty when no limit applies. */
      readonly limitHeaders: [string, string][];
    }
  | {
      readonly admitted: false;
      /** Undefined for a request target the proxy refuses before any key is read. */
      readonly admission: Refused | undefined;
      /** The proxy's answer to it: status, headers and JSON body. */
      readonly answer: RefusalResponse;
    };

export interface GatewayTarget {
  readonly path: string;
  /** Null: the catch-all; undefined: no route takes it and there is no catch-all. */
  readonly routeId: string | null | undefined;
  readonly client: string | undefined;
}

/**
 * What the proxy would read of the request's line and client: its path in normal form (usage's
 * endpoint: NO_PATH_ENDPOINT when the gateway named none), the route it takes, and the client's
 * address when it is one. Undefined for a target or method the proxy would refuse.
 */
export function targetOf(
  deps: Pick<ExtauthDeps, 'routing'>,
  request: GatewayRequest,
): GatewayTarget | undefined {
  const path = pathOf(request);
  if (path === null || request.conflicting === true || !METHOD.test(request.method)) return undefined;
  // An address a gateway names is counted per visitor and kept in the failure log: an IP address or none.
  const client = request.client !== undefined && isIP(request.client) !== 0 ? request.client : undefined;
  // Without a path it is decided as verify decides one: for the catch-all.
  const routeId = path === undefined ? null : deps.routing.routeIdOf(request.host, request.method, path);
  return { path: path ?? NO_PATH_ENDPOINT, routeId, client };
}

/** A decision admitted for a caller gone meanwhile: nobody to answer (`decide`). */
export class CallerGoneError extends Error {
  constructor() {
    super('the caller is gone');
  }
}

/**
 * The decision for `request`, counted once in usage (a valid key's) and in the metrics. `gone()`:
 * its caller will not take the answer (it cancelled, its deadline passed); one admitted by then is
 * counted as the proxy counts a client that left while it was admitted (499, failed, its cost
 * charged, its places given back) and rejects with a CallerGoneError.
 */
export async function decide(
  deps: ExtauthDeps,
  protocol: ExtauthProtocol,
  request: GatewayRequest,
  gone: () => boolean,
): Promise<GatewayDecision> {
  const target = targetOf(deps, request);
  if (target === undefined) {
    deps.metrics.extauthDecisions.inc({ protocol, code: 'invalid_request_target' });
    return {
      admitted: false,
      admission: undefined,
      answer: errorResponse('invalid_request_target', { 'x-request-id': request.requestId }),
    };
  }
  const { client, routeId, path: endpoint } = target;
  const admission = await admit(deps, {
    requestId: request.requestId,
    secret: request.secret,
    client,
    origin: request.origin,
    referer: request.referer,
    customerId: request.customerId,
    routeId,
    method: request.method,
    path: endpoint,
    ...(request.cost !== undefined && { cost: request.cost }),
    ...(request.body !== undefined && { body: request.body }),
  });
  const decided = {
    requestId: request.requestId,
    method: request.method,
    path: endpoint,
    routeId: routeId ?? null,
    customerId: request.customerId,
    clientAddress: client ?? null,
  };
  if (admission.admitted && gone()) {
    admission.release?.();
    countDecision(deps, admission, decided, performance.now() - request.receivedAt, { callerGone: true });
    deps.metrics.extauthDecisions.inc({ protocol, code: 'client_closed' });
    throw new CallerGoneError();
  }
  // Nothing tells this listener when the gateway's request ends: a reservation and the places it took
  // are held until the settle call names it (x-tollgate-reservation), a place at most for the lease
  // a dead replica's places lapse after (CONCURRENCY_LEASE_SECONDS).
  const reservationId = await deps.reservations.counted(
    admission,
    decided,
    performance.now() - request.receivedAt,
    admission.admitted ? admission.release : undefined,
  );
  deps.metrics.extauthDecisions.inc({ protocol, code: admission.admitted ? 'ok' : admission.code });
  const now = deps.clock();
  if (!admission.admitted) {
    const answer = refusalResponse(admission, request.requestId, now);
    // As the proxy's refusals do: a page reads one that its gateway passes on whole (Caddy, Traefik,
    // Envoy's denied response) only with the CORS headers of the route it asked for.
    if (request.origin !== undefined) {
      const { routing } = deps;
      const rule =
        request.target === undefined
          ? routing.unroutedCors
          : routing.corsOf(request.host, request.method, endpoint);
      if (rule !== undefined) addHeaders(answer.headers, corsHeaders(rule, request.origin));
    }
    return { admitted: false, admission, answer };
  }
  const upstream = upstreamHeaders(admission, deps.config.customerIdHeader);
  if (reservationId !== undefined) upstream.push([RESERVATION_HEADER, reservationId]);
  return { admitted: true, admission, upstream, limitHeaders: limitHeaders(admission, now) };
}

/** Names an admitted decision's reservation or places, for `POST /tollgate/verify/settle`. */
export const RESERVATION_HEADER = 'x-tollgate-reservation';

/** What the backend receives of an admitted request, as the proxy sends it (src/proxy/forwarding-headers.ts). */
function upstreamHeaders(admission: Admitted, customerIdHeader: string): [string, string][] {
  const key = admission.key;
  const headers: [string, string][] = [
    ['x-api-key', admission.secret],
    ['x-consumer-api-key-id', key.id],
  ];
  if (key.consumerId !== undefined && key.consumerId !== null)
    headers.push(['x-consumer-id', key.consumerId]);
  // A token's `sub`, its UTF-8 as the header's bytes, as the proxy sends it.
  if (admission.subject !== undefined)
    headers.push([customerIdHeader, Buffer.from(admission.subject).toString('latin1')]);
  return headers;
}

function limitHeaders(admission: Admitted, nowMs: number): [string, string][] {
  if (admission.limit === undefined) return [];
  const into: string[] = [];
  addLimitHeaders(into, admission.limit, nowMs);
  return [
    [into[0]!, into[1]!],
    [into[2]!, into[3]!],
  ];
}
