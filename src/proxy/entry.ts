import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import { errorResponse, type ErrorCode } from '../errors.js';
import type { ResolvedKey } from '../keys/key-cache.js';
import type { Logger } from '../ops/logger.js';
import { NO_ROUTE_LABEL, type Metrics, type ProxyOutcome } from '../ops/metrics.js';
import { normalisedPath } from '../plans/normalised-path.js';
import { tracer } from '../tracing/tracer.js';
import type { Outcome } from '../usage/usage.js';
import {
  admit,
  refusalResponse,
  type Admitted,
  type AdmissionDeps,
  type RefusalResponse,
  type Refused,
} from './admission.js';
import { addHeaders, corsHeaders, isPreflight, preflightAnswer } from './cors.js';
import { credentialOf } from './credential.js';
import { countKeyUse, failureFacts, REFUSAL_OUTCOMES, type KeyUseDeps } from './key-use.js';
import { customerIdOf, forwardedFacts, type Forwarded } from './forwarding-headers.js';
import { hasDotSegment, originForm } from './request-target.js';
import type { RouteTarget, Routing } from './routing.js';

export interface EntryDeps extends AdmissionDeps, KeyUseDeps {
  readonly metrics: Metrics;
  readonly routing: Pick<Routing, 'route' | 'unroutedCors' | 'corsOf'>;
  readonly config: Pick<Config, 'trustProxy' | 'customerIdHeader'>;
  readonly logger: Logger;
}

/** A request that may go to the backend: where to, the forwarded facts, and its admission. */
export interface Entered {
  readonly entered: true;
  /** Held until the request is finished: pass it to `finished`. */
  readonly route: RouteTarget;
  /** In normal form (plans/normalised-path.ts): matched, counted and forwarded so. */
  readonly path: string;
  readonly search: string;
  readonly facts: Forwarded;
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
 * (origin form, its path normalised, no dot segment), its route, the forwarded facts, authentication
 * and limiting, and a client that left meanwhile (499: quota spent, nobody to answer). What is not entered is already counted in the
 * metrics and in usage (a valid key's request); the caller only writes `refusal` its own way.
 */
export async function enter(
  deps: EntryDeps,
  req: IncomingMessage,
  requestId: string,
  receivedAt: number,
  /** The client's response or socket: `destroyed` once it went away. */
  client: { readonly destroyed: boolean },
): Promise<Entered | NotEntered> {
  const target = originForm(req.url ?? '/', req.headers.host);
  // One spelling per path: what routes and limits match is what the backend receives.
  const path = target && normalisedPath(target.path);
  if (target === undefined || path === undefined || hasDotSegment(path)) {
    deps.metrics.proxyRequests.inc({ outcome: 'bad_request' satisfies ProxyOutcome });
    finished(deps, {
      req,
      requestId,
      receivedAt,
      path: undefined,
      key: undefined,
      status: 400,
      outcome: undefined,
      cost: 0,
      code: 'invalid_request_target',
    });
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
  const facts = forwardedFacts(req, deps.config.trustProxy);
  const admission = await admit(deps, {
    secret: credentialOf(req.headers),
    client: facts.client,
    origin,
    customerId: customerIdOf(req.headers, deps.config.customerIdHeader),
    referer: req.headers.referer,
    routeId: route?.routeId,
    method: req.method!,
    path,
    incoming: req,
  });
  // A token's `sub` is the customer id: the backend and usage read it in place of the client's (its
  // UTF-8 as the header's bytes, as customerIdOf reads them).
  if (admission.subject !== undefined)
    req.headers[deps.config.customerIdHeader] = Buffer.from(admission.subject).toString('latin1');
  if (!admission.admitted) {
    countRefusal(deps.metrics, admission.code);
    const refusal = refusalResponse(admission, requestId, deps.clock());
    if (cors !== undefined) addHeaders(refusal.headers, cors);
    finished(deps, {
      req,
      requestId,
      receivedAt,
      path,
      key: admission.key,
      status: refusal.status,
      outcome: REFUSAL_OUTCOMES[admission.code],
      cost: 0,
      route: route ?? NO_ROUTE,
      refusal: admission,
    });
    return { entered: false, refusal };
  }
  // Admitted, so a route took it: admission refuses a request without one.
  const routed = route!;
  if (client.destroyed) {
    // The client left while it was being admitted: nothing to forward and nobody to answer (499). It
    // is counted with the exchanges whose client left mid-way; usage counts it as failed.
    admission.release?.();
    deps.metrics.proxyRequests.inc({ outcome: 'forwarded' satisfies ProxyOutcome });
    finished(deps, {
      req,
      requestId,
      receivedAt,
      path,
      key: admission.key,
      status: 499,
      outcome: undefined,
      cost: admission.cost,
      route: routed,
    });
    return { entered: false, refusal: undefined };
  }
  return { entered: true, route: routed, path, search: target.search, facts, admission, cors };
}

/** A request no route took (and no catch-all): answered 404 `route_not_found`. */
export const NO_ROUTE: unique symbol = Symbol('no route');

/** How each refusal of the admission shows in the proxy's metrics, and the authentication failures among them. */
const REFUSAL_METRICS: Partial<Record<ErrorCode, readonly [ProxyOutcome, AuthFailure?]>> = {
  missing_api_key: ['unauthorized', 'missing'],
  invalid_api_key: ['unauthorized', 'invalid'],
  key_disabled: ['unauthorized', 'disabled'],
  key_expired: ['unauthorized', 'expired'],
  token_expired: ['unauthorized', 'expired'],
  too_many_failed_attempts: ['throttled'],
  auth_unavailable: ['unavailable'],
  limit_unavailable: ['unavailable'],
  route_not_found: ['no_route'],
  route_not_allowed: ['route_not_allowed'],
  origin_not_allowed: ['origin_not_allowed'],
  address_not_allowed: ['address_not_allowed'],
  invalid_customer_id: ['bad_request'],
  rate_limit_exceeded: ['limited'],
  credits_exhausted: ['credits_exhausted'],
  concurrency_limit_exceeded: ['concurrency_limited'],
};
type AuthFailure = 'missing' | 'invalid' | 'disabled' | 'expired';

function countRefusal(metrics: Metrics, code: ErrorCode): void {
  const [outcome, authFailure] = REFUSAL_METRICS[code]!;
  metrics.proxyRequests.inc({ outcome });
  if (authFailure !== undefined) metrics.authFailures.inc({ reason: authFailure });
  if (code === 'rate_limit_exceeded') metrics.rateLimited.inc();
}

/** The outcome in usage of a response the backend gave: `backendError` for a 5xx. */
export const backendOutcome = (status: number): Outcome | undefined =>
  status >= 500 ? 'backendError' : undefined;

/** How a proxied request ended, for usage, the route metrics and the access log. */
export interface Finished {
  readonly req: IncomingMessage;
  readonly requestId: string;
  /** `performance.now()` when the request arrived. */
  readonly receivedAt: number;
  /** Request path without the query; undefined for a refused request target. */
  readonly path: string | undefined;
  /** Set when the request presented a valid key: only then does usage count it. */
  readonly key: ResolvedKey | undefined;
  /** What the client got (499: it left first); successful when the backend answered below 400. */
  readonly status: number;
  /** Why it failed, when usage tells (a 429 of the backend's own is no `rateLimited`). */
  readonly outcome: Outcome | undefined;
  /** Units charged: 0 for a refused request. */
  readonly cost: number;
  /** The request's route, released here; unset for a request target refused before routing. */
  readonly route?: RouteTarget | typeof NO_ROUTE;
  /** The code of Tollgate's own 502 or 504 (a refusal's is in `refusal`); unset when the backend answered. */
  readonly code?: ErrorCode;
  /** Set when admission refused it: its code and limit go into the failure log. */
  readonly refusal?: Pick<Refused, 'code' | 'limit'>;
}

/**
 * Usage and last use, for a request that presented a valid key; the route's count and its hold on
 * its upstream; and the access-log line (debug only).
 */
export function finished(deps: EntryDeps, f: Finished): void {
  const durationMs = performance.now() - f.receivedAt;
  const route = f.route;
  if (route === NO_ROUTE) {
    deps.metrics.routeRequests.inc(NO_ROUTE_LABEL, f.status);
  } else if (route !== undefined) {
    deps.metrics.routeRequests.inc(route.label, f.status);
    route.upstream.release();
  }
  const routeId = route === undefined || route === NO_ROUTE ? null : route.routeId;
  if (f.key !== undefined && f.path !== undefined) {
    const customerId = customerIdOf(f.req.headers, deps.config.customerIdHeader);
    const failure =
      f.status < 400
        ? undefined
        : failureFacts(f.status, f.outcome, f.refusal, {
            requestId: f.requestId,
            method: f.req.method ?? '',
            clientAddress: forwardedFacts(f.req, deps.config.trustProxy).client,
          });
    countKeyUse(deps, f.key, f.path, routeId, customerId, f.status, f.outcome, f.cost, durationMs, failure);
  }
  if (deps.logger.isLevelEnabled('debug')) {
    deps.logger.debug(
      {
        reqId: f.requestId,
        method: f.req.method,
        path: f.path,
        status: f.status,
        keyId: f.key?.id,
        routeId,
        durationMs,
      },
      'proxied request',
    );
  }
  // Last: the log lines above carry the request's trace.
  if (tracer !== undefined)
    tracer.finished({
      req: f.req,
      status: f.status,
      path: f.path,
      keyId: f.key?.id,
      consumerId: f.key?.consumerId,
      routeId,
      cost: f.cost,
      code: f.code ?? f.refusal?.code,
    });
}
