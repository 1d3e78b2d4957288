import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import { errorResponse, type ErrorCode } from '../errors.js';
import type { ResolvedKey } from '../keys/key-cache.js';
import type { Logger } from '../ops/logger.js';
import { NO_ROUTE_LABEL, type Metrics, type ProxyOutcome } from '../ops/metrics.js';
import { normalisedPath } from '../plans/normalised-path.js';
import { answeredEnd, tracer } from '../tracing/tracer.js';
import type { Outcome } from '../usage/usage.js';
import { admit, type Admission, type Admitted, type AdmissionDeps, type Refused } from './admission.js';
import { addHeaders, corsHeaders, isPreflight, preflightAnswer } from './cors.js';
import { ClientGoneError } from './client-gone-error.js';
import { credentialOf } from './credential.js';
import { customerIdOf, forwardedFacts } from './forwarding-headers.js';
import { countKeyUse, failureFacts, type KeyUseDeps } from './key-use.js';
import type { RequestArrival, RequestContext } from './request-context.js';
import { refusalResponse, type RefusalResponse } from './refusal-response.js';
import { REFUSALS, type RefusalCode } from '../refusals.js';
import { hasDotSegment, type RequestTarget } from './request-target.js';
import type { RouteTarget, Routing } from './routing.js';

export interface EntryDeps extends AdmissionDeps, KeyUseDeps {
  readonly metrics: Metrics;
  readonly routing: Pick<Routing, 'route' | 'unroutedCors' | 'corsOf'>;
  readonly config: Pick<Config, 'trustProxy' | 'customerIdHeader'>;
  readonly logger: Logger;
}

/** The context of an admitted request: a route took it (admission refuses one without). */
export type RoutedContext = RequestContext & { readonly route: RouteTarget };

/** A request that may go to the backend: its context, its admission, and its CORS headers. */
export interface Entered {
  readonly entered: true;
  /** Its route is held until the request is finished: pass the context to `finished`. */
  readonly context: RoutedContext;
  readonly admission: Admitted;
  /** The route's CORS headers for the request's origin (src/proxy/cors.ts); undefined: no Origin, or no policy. */
  readonly cors: string[] | undefined;
}

/** A request answered by Tollgate itself (`refusal`), or whose client left while it was admitted. */
export interface NotEntered {
  readonly entered: false;
  readonly refusal: RefusalResponse | undefined;
}

/**
 * The steps before forwarding, the same for plain requests and WebSocket upgrades: the request target
 * (origin form, its path normalised, no dot segment), a preflight a CORS policy answers, its route,
 * the request's context (built here, once), authentication and limiting, and a client that left
 * meanwhile (499: nobody to answer; quota spent once admitted, none while its body was read). What is
 * not entered is already counted in the metrics, in usage (a valid key's request) and in its trace;
 * the caller only writes `refusal` its own way.
 */
export function enter(
  deps: EntryDeps,
  req: IncomingMessage,
  /** As the listener parsed it (src/server.ts); undefined: not in a form the proxy takes. */
  target: RequestTarget | undefined,
  requestId: string,
  /** `performance.now()` when the request arrived. */
  receivedAt: number,
  /** The client's response or socket: `destroyed` once it went away. */
  client: { readonly destroyed: boolean },
  /** Sends `100 Continue`, for a client waiting for one before its body (AdmissionRequest.continueBody). */
  continueBody?: () => void,
): Entered | NotEntered | Promise<Entered | NotEntered> {
  // One spelling per path: what routes and limits match is what the backend receives.
  const path = target && normalisedPath(target.path);
  if (target === undefined || path === undefined || hasDotSegment(path)) {
    countRefusal(deps.metrics, 'invalid_request_target');
    finished(
      deps,
      req,
      { requestId, receivedAt, method: req.method! },
      { key: undefined, status: 400, outcome: undefined, cost: 0 },
      'invalid_request_target',
    );
    return {
      entered: false,
      refusal: errorResponse('invalid_request_target', { 'x-request-id': requestId }),
    };
  }
  // A request from a web page names its origin: the only header a request without one pays for.
  const origin = req.headers.origin;
  if (origin !== undefined && isPreflight(req.method, req.headers)) {
    // The policy of the route the page's request will take: answered here, no key asked for, nothing
    // forwarded, charged or counted in usage. Without a policy, a preflight goes on as any request.
    const requested = String(req.headers['access-control-request-method']).toUpperCase();
    const rule = deps.routing.corsOf(req.headers.host, requested, path);
    if (rule !== undefined) {
      const answer = preflightAnswer(rule, origin, requestId);
      deps.metrics.corsPreflights.inc({
        origin: answer.headers['access-control-allow-origin'] === undefined ? 'refused' : 'allowed',
      });
      // Its trace ends with its answer, as every request's does.
      if (tracer !== undefined) tracer.finished(answeredEnd(req, 204, path, undefined));
      return { entered: false, refusal: answer };
    }
  }
  // Routed before admission, so that the route a request is admitted for is the one it takes.
  const route = deps.routing.route(req, path);
  let cors: string[] | undefined;
  if (origin !== undefined) {
    const rule = route === undefined ? deps.routing.unroutedCors : route.cors;
    if (rule !== undefined) cors = corsHeaders(rule, origin);
  }
  const forwarded = forwardedFacts(req, deps.config.trustProxy);
  const context: RequestContext = {
    requestId,
    receivedAt,
    method: req.method!,
    path,
    search: target.search,
    route,
    routeId: route?.routeId,
    forwarded,
    client: forwarded.client,
    secret: credentialOf(req.headers),
    origin,
    referer: req.headers.referer,
    customerId: customerIdOf(req.headers, deps.config.customerIdHeader),
    tokenSubject: undefined,
    incoming: req,
    continueBody,
  };
  const admitting = admit(deps, context);
  // An answer from memory alone (a fresh key the limiter decides on from memory, a wrong checksum)
  // waits for no turn: an admitted request leaves for the backend before Node is done with its arrival.
  return admitting instanceof Promise
    ? admitting.then(
        (admission) => entered(deps, req, context, cors, client, admission),
        (err: unknown) => {
          // Its client left while its body was read: nothing was charged.
          if (!(err instanceof ClientGoneError)) throw err;
          context.customerId = err.customerId;
          return gone(deps, req, context, err.key, 0);
        },
      )
    : entered(deps, req, context, cors, client, admitting);
}

/** The request once admission answered: refused (its answer), gone (499), or on its way. */
function entered(
  deps: EntryDeps,
  req: IncomingMessage,
  context: RequestContext,
  cors: string[] | undefined,
  client: { readonly destroyed: boolean },
  admission: Admission,
): Entered | NotEntered {
  // A token's `sub` is the customer id: usage counts it, and the backend receives it, in place of the
  // client's.
  if (admission.subject !== undefined) context.customerId = context.tokenSubject = admission.subject;
  if (!admission.admitted) {
    countRefusal(deps.metrics, admission.code);
    const refusal = refusalResponse(admission, context.requestId, deps.clock());
    if (cors !== undefined) addHeaders(refusal.headers, cors);
    finished(deps, req, context, {
      key: admission.key,
      status: refusal.status,
      outcome: REFUSALS[admission.code].usageOutcome,
      cost: 0,
      refusal: admission,
    });
    return { entered: false, refusal };
  }
  if (client.destroyed) {
    // The client left while it was being admitted: its places go back, its charge stays.
    admission.release?.();
    return gone(deps, req, context, admission.key, admission.cost);
  }
  // Admitted, so a route took it: admission refuses a request without one.
  return { entered: true, context: context as RoutedContext, admission, cors };
}

/**
 * A request whose client left before it was forwarded: nothing to forward and nobody to answer (499).
 * It is counted with the exchanges whose client left mid-way; usage counts it as failed, at `cost`.
 */
function gone(
  deps: EntryDeps,
  req: IncomingMessage,
  context: RequestContext,
  key: ResolvedKey,
  cost: number,
): NotEntered {
  deps.metrics.proxyRequests.inc({ outcome: 'forwarded' satisfies ProxyOutcome });
  finished(deps, req, context, { key, status: 499, outcome: undefined, cost });
  return { entered: false, refusal: undefined };
}

/** How the proxy's metrics count a refusal: its outcome, and the authentication failures among them. */
function countRefusal(metrics: Metrics, code: RefusalCode): void {
  const { metric, authFailure } = REFUSALS[code];
  metrics.proxyRequests.inc({ outcome: metric });
  if (authFailure !== null) metrics.authFailures.inc({ reason: authFailure });
  if (metric === 'limited') metrics.rateLimited.inc();
}

/** The outcome in usage of a response the backend gave: `backendError` for a 5xx. */
export const backendOutcome = (status: number): Outcome | undefined =>
  status >= 500 ? 'backendError' : undefined;

/** How a request ended, for usage, the route metrics, the access log and its trace. */
export interface Ending {
  /** Set when the request presented a valid key: only then does usage count it. */
  readonly key: ResolvedKey | undefined;
  /** What the client got (499: it left first); successful when the backend answered below 400. */
  readonly status: number;
  /** Why it failed, when usage tells (a 429 of the backend's own is no `rateLimited`). */
  readonly outcome: Outcome | undefined;
  /** Units charged: 0 for a refused request. */
  readonly cost: number;
  /** Its response reported no units readable by its settle rule: `cost` is its reservation. */
  readonly unsettled?: boolean;
  /** Set when admission refused it: its code and limit go into the failure log. */
  readonly refusal?: Pick<Refused, 'code' | 'limit'>;
  /** Counted already, at its reservation, by a sweep that took its record (src/reservations/in-flight.ts). */
  readonly countedElsewhere?: boolean;
  /** `performance.now()` as its answer ended, when that was before this call; else the duration ends now. */
  readonly endedAt?: number;
}

/**
 * Every request that `enter` did not leave to its preflight answer comes here once: the route's count
 * and its hold on its upstream; usage and last use for a request that presented a valid key; the
 * access-log line (debug only); and the end of its trace. `request` is only its arrival when its
 * target was refused; `code` is that of Tollgate's own answer (a 400, 502 or 504; a refusal's is in
 * `ending.refusal`).
 */
export function finished(
  deps: EntryDeps,
  req: IncomingMessage,
  request: RequestArrival | RequestContext,
  ending: Ending,
  code?: ErrorCode,
): void {
  const context = 'path' in request ? request : undefined;
  const route = context?.route;
  if (route !== undefined) {
    deps.metrics.routeRequests.inc(route.label, ending.status);
    route.upstream.release();
  } else if (context !== undefined) {
    deps.metrics.routeRequests.inc(NO_ROUTE_LABEL, ending.status);
  }
  const routeId = route === undefined ? null : route.routeId;
  const { key, status } = ending;
  const counted = key !== undefined && context !== undefined && ending.countedElsewhere !== true;
  const logged = deps.logger.isLevelEnabled('debug');
  // Read only when something records it: a keyless refusal (a flood's) reads no clock here.
  const durationMs = counted || logged ? (ending.endedAt ?? performance.now()) - request.receivedAt : 0;
  if (counted) {
    const failure =
      status < 400
        ? undefined
        : failureFacts(status, ending.outcome, ending.refusal, {
            requestId: context.requestId,
            method: context.method,
            clientAddress: context.client,
          });
    countKeyUse(
      deps,
      key,
      context.path,
      routeId,
      context.customerId,
      status,
      ending.outcome,
      ending.cost,
      durationMs,
      failure,
      { unsettled: ending.unsettled },
    );
  }
  if (logged) {
    deps.logger.debug(
      {
        reqId: request.requestId,
        method: request.method,
        path: context?.path,
        status,
        keyId: key?.id,
        routeId,
        durationMs,
      },
      'proxied request',
    );
  }
  // Last: the log lines above carry the request's trace.
  if (tracer !== undefined)
    tracer.finished({
      req,
      status,
      path: context?.path,
      keyId: key?.id,
      consumerId: key?.consumerId,
      routeId,
      cost: ending.cost,
      code: code ?? ending.refusal?.code,
    });
}
