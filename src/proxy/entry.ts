import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import { errorResponse } from '../errors.js';
import type { Logger } from '../ops/logger.js';
import type { ProxyOutcome } from '../ops/metrics.js';
import type { LastUseTracker } from '../keys/last-use.js';
import type { UsageRecorder } from '../usage/recorder.js';
import { admit, refusalResponse, type Admitted, type AdmissionDeps, type RefusalResponse } from './admission.js';
import { customerIdOf, forwardedFacts, type Forwarded } from './forwarding-headers.js';
import { hasDotSegment, originForm } from './request-target.js';

export interface EntryDeps extends AdmissionDeps {
  readonly config: Pick<Config, 'trustProxy' | 'customerIdHeader'>;
  readonly recorder: Pick<UsageRecorder, 'record'>;
  readonly lastUse: Pick<LastUseTracker, 'used'>;
  readonly logger: Logger;
}

/** A request that may go to the backend: where to, the forwarded facts, and its admission. */
export interface Entered {
  readonly entered: true;
  readonly path: string;
  readonly search: string;
  readonly facts: Forwarded;
  readonly admission: Admitted;
}

/** A request answered by Tollgate itself (`refusal`), or whose client left while it was admitted. */
export interface NotEntered {
  readonly entered: false;
  readonly refusal: RefusalResponse | undefined;
}

/**
 * The steps before forwarding, the same for plain requests and WebSocket upgrades: the request target
 * (origin form, no dot segment), the forwarded facts, authentication and limiting, and a client that
 * left meanwhile (499: quota spent, nobody to answer). What is not entered is already counted in the
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
  if (target === undefined || hasDotSegment(target.path)) {
    deps.metrics.proxyRequests.inc({ outcome: 'bad_request' satisfies ProxyOutcome });
    finished(deps, { req, requestId, receivedAt, path: undefined, keyId: undefined, status: 400 });
    return { entered: false, refusal: errorResponse('invalid_request_target', { 'x-request-id': requestId }) };
  }
  const facts = forwardedFacts(req, deps.config.trustProxy);
  const admission = await admit(deps, req.headers, facts.client);
  if (!admission.admitted) {
    const refusal = refusalResponse(admission, requestId, deps.clock());
    finished(deps, { req, requestId, receivedAt, path: target.path, keyId: admission.key?.id, status: refusal.status, rateLimited: admission.code === 'rate_limit_exceeded' });
    return { entered: false, refusal };
  }
  if (client.destroyed) {
    // The client left while it was being admitted: nothing to forward and nobody to answer (499). It
    // is counted with the exchanges whose client left mid-way; usage counts it as failed.
    deps.metrics.proxyRequests.inc({ outcome: 'forwarded' satisfies ProxyOutcome });
    finished(deps, { req, requestId, receivedAt, path: target.path, keyId: admission.key.id, status: 499 });
    return { entered: false, refusal: undefined };
  }
  return { entered: true, path: target.path, search: target.search, facts, admission };
}

/** How a proxied request ended, for usage and the access log. */
export interface Finished {
  readonly req: IncomingMessage;
  readonly requestId: string;
  /** `performance.now()` when the request arrived. */
  readonly receivedAt: number;
  /** Request path without the query; undefined for a refused request target. */
  readonly path: string | undefined;
  /** Set when the request presented a valid key: only then does usage count it. */
  readonly keyId: string | undefined;
  /** What the client got (499: it left first); successful when the backend answered below 400. */
  readonly status: number;
  /** Refused by the limiter (a 429 of the backend's own is not). */
  readonly rateLimited?: boolean;
}

/** Usage and last use, for a request that presented a valid key, and the access-log line (debug only). */
export function finished(deps: EntryDeps, f: Finished): void {
  const durationMs = performance.now() - f.receivedAt;
  if (f.keyId !== undefined && f.path !== undefined) {
    const now = deps.clock();
    deps.lastUse.used(f.keyId, now);
    deps.recorder.record(f.keyId, f.path, customerIdOf(f.req.headers, deps.config.customerIdHeader), f.status < 400, durationMs, f.rateLimited === true, now);
  }
  if (deps.logger.isLevelEnabled('debug')) {
    deps.logger.debug(
      { reqId: f.requestId, method: f.req.method, path: f.path, status: f.status, keyId: f.keyId, durationMs },
      'proxied request',
    );
  }
}
