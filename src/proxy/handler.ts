import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { Config } from '../config.js';
import { sendError, type ErrorCode } from '../errors.js';
import type { KeyCache } from '../keys/key-cache.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Logger } from '../ops/logger.js';
import type { Metrics, ProxyOutcome } from '../ops/metrics.js';
import type { LastUseTracker } from '../keys/last-use.js';
import { answeredEnd, tracer } from '../tracing/tracer.js';
import type { UsageRecorder } from '../usage/recorder.js';
import type { FailureThrottle } from './auth-throttle.js';
import { addHeaders, withoutBackendCors } from './cors.js';
import { ClientClosedError } from './client-closed-error.js';
import { backendOutcome, enter, finished, type Entered, type NotEntered } from './entry.js';
import { acceptsTrailers, backendHeaders, requestIdOf, responseHeaders } from './forwarding-headers.js';
import { backendFacts } from './request-context.js';
import type { RequestTarget } from './request-target.js';
import { addLimitHeaders } from './rate-limit-headers.js';
import { forwardedPath, type Routing } from './routing.js';
import { unsettled, type Reading } from '../metering/reading.js';
import type { UnitMeter } from '../metering/unit-meter.js';
import { headerBagOf, meterOf, settledCost, type PendingSettlement } from './settlement.js';
import { heldUsage, type Held } from '../reservations/held.js';
import type { InFlight, InFlightRequest } from '../reservations/in-flight.js';
import type { Outcome } from '../usage/usage.js';

export interface ProxyDeps {
  readonly config: Pick<Config, 'trustProxy' | 'customerIdHeader'>;
  /** The route table and the backend pools; shared by the HTTP and upgrade handlers, closed by its owner. */
  readonly routing: Pick<Routing, 'route' | 'unroutedCors' | 'corsOf'>;
  readonly keyCache: KeyCache;
  readonly limiter: RateLimiter;
  readonly recorder: Pick<UsageRecorder, 'record'>;
  /** Notes when each key was presented: `lastUsedAt`. */
  readonly lastUse: Pick<LastUseTracker, 'used'>;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Epoch milliseconds, for the limiter's windows; durations use the monotonic clock. */
  readonly clock: () => number;
  /** Failed authentications per client address; share one between the HTTP and upgrade handlers. */
  readonly authThrottle?: FailureThrottle;
  /** The most of a body read to match or reserve on it (BODY_MATCH_MAX_BYTES). */
  readonly bodyMatchMaxBytes?: number;
  /** Where usage-priced requests long in flight are written, to count them if this process dies. */
  readonly reservations?: { readonly inFlight: InFlight | undefined };
}

export type ProxyHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  target: RequestTarget | undefined,
) => void;

/**
 * One forwarded request, and undici's handler for it (`pool.dispatch`): undici calls it with the raw
 * head and body chunks: no stream wrapper, parsed header object, abort signal or callbacks on the way.
 */
class Exchange implements Dispatcher.DispatchHandler, InFlightRequest {
  status = 0;
  readonly upstreamStartedAt = performance.now();
  /** Cancels the backend request; set once undici has put the request on a connection. */
  private abortBackend: ((err?: Error) => void) | undefined = undefined;
  /** Lets the backend connection go on after a pause for backpressure; set with the response head. */
  private resume: (() => void) | undefined = undefined;
  /** The client went away before the response was complete: nobody to answer. */
  private clientGone = false;
  /** Answered (or failed) and counted: later callbacks do nothing. */
  private settled = false;
  /** Reads a usage-priced response's units; opened on the backend's fields once the first chunks left. */
  private meter: UnitMeter | undefined = undefined;
  private meterFields: string[] | undefined = undefined;
  /** Where `inFlight` holds it (InFlight.open). */
  private readonly inFlightSlot: number;
  /** What the meter read, once the response ended or failed. */
  private reading: Reading = unsettled('cut-short');
  /**
   * Chunks passed on this turn that the meter has yet to read; made with the head. Node sends a turn's
   * writes on the next tick (it corks the socket at its first write): the meter reads them in a tick
   * queued after that one, so that its reading never holds up their sending.
   */
  private unread: Buffer[] | undefined = undefined;
  /** The backend's trailers (raw pairs; none: empty) once its response is complete: the meter ends. */
  private trailersGiven: readonly (Buffer | string)[] | undefined = undefined;
  /** As the answer ended: its duration ends here, not when it is counted (after the meter, its record). */
  private endedAt: number | undefined = undefined;
  /**
   * A client that goes away cancels its backend request instead of holding a pooled connection.
   * Registered with `on`, never removed: `close` fires once per response, after it is settled too.
   */
  readonly onClientClose = (): void => {
    if (this.settled || this.res.writableFinished) return;
    this.clientGone = true;
    this.abortBackend?.(new ClientClosedError());
  };

  constructor(
    readonly proxy: ProxyDeps,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** Its context and admission, and the route's CORS headers replacing the backend's. */
    readonly entry: Entered,
    /** The client sent `TE: trailers`: the backend's trailers are passed on. */
    readonly trailers: boolean,
    /** Usage-priced: where it is written if it lasts. */
    private readonly inFlight: InFlight | undefined,
  ) {
    this.inFlightSlot = inFlight?.open(this) ?? -1;
  }

  get receivedAt(): number {
    return this.entry.context.receivedAt;
  }

  /** Its record while in flight: its reservation, unsettled, with the status answered so far (none: 502). */
  held(): Held {
    const { context, admission } = this.entry;
    const { reserved, settleMax } = admission.settlement!;
    const durationMs = performance.now() - context.receivedAt;
    const request = { path: context.path, routeId: context.route.routeId, customerId: context.customerId };
    const usage = heldUsage(admission.key, request, durationMs, this.status === 0 ? 502 : this.status);
    return { reserved, settleMax, usage, reason: 'replica-gone' };
  }

  onConnect(abort: (err?: Error) => void): void {
    // A request that waited in the pool's queue may find its client already gone.
    if (this.clientGone) abort(new ClientClosedError());
    else this.abortBackend = abort;
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // informational (103 Early Hints): not passed on
    const { proxy, res, entry } = this;
    this.status = statusCode;
    proxy.metrics.upstreamDuration.observe((performance.now() - this.upstreamStartedAt) / 1000);
    const limit = entry.admission.limit;
    const headers = responseHeaders(raw, limit !== undefined, this.trailers);
    if (entry.cors !== undefined) withoutBackendCors(headers);
    // Decoded once for the client and the meter; the meter opens after the head and first chunk leave.
    if (entry.admission.settlement?.rule !== undefined) {
      this.meterFields = headers.slice();
      this.unread = [];
    }
    headers.push('x-request-id', entry.context.requestId);
    if (entry.cors !== undefined) headers.push(...entry.cors);
    if (limit !== undefined) addLimitHeaders(headers, limit, proxy.clock());
    res.writeHead(statusCode, headers);
    this.resume = resume;
    return true;
  }

  onData(chunk: Buffer): boolean {
    const res = this.res;
    if (res.destroyed) {
      this.onClientClose();
      return false;
    }
    const written = res.write(chunk);
    // The client has the chunk first; the meter reads it after, keeping nothing of it once read.
    if (this.unread !== undefined && this.unread.push(chunk) === 1)
      process.nextTick(Exchange.readUnread, this);
    if (written) return true;
    // Backpressure: the backend connection pauses until the client has taken what was written.
    res.once('drain', this.resume!);
    return false;
  }

  onComplete(trailers: string[] | null): void {
    this.endedAt = performance.now();
    if (this.trailers && trailers !== null && trailers.length > 0) {
      const fields: [string, string][] = [];
      for (let i = 0; i + 1 < trailers.length; i += 2)
        fields.push([String(trailers[i]), String(trailers[i + 1])]);
      this.res.addTrailers(fields);
    }
    this.res.end();
    if (this.unread === undefined) return this.finish(null);
    // The meter ends after reading the last chunks: in their tick when one is queued, else in its own.
    this.trailersGiven = trailers ?? [];
    if (this.unread.length === 0) process.nextTick(Exchange.readUnread, this);
  }

  /**
   * The meter reads this turn's chunks, now sent, and the response's end once it came; a finished
   * exchange's are dropped unread. (A rule whose pointers cannot be read has no meter.)
   */
  private static readUnread(exchange: Exchange): void {
    const { unread, trailersGiven, meterFields } = exchange;
    const finished = exchange.settled;
    if (!finished && meterFields !== undefined) {
      exchange.meter = meterOf(exchange.entry.admission.settlement!, meterFields);
      exchange.meterFields = undefined;
    }
    const meter = exchange.meter;
    if (!finished) for (const chunk of unread!) meter?.write(chunk);
    unread!.length = 0;
    if (finished || trailersGiven === undefined) return;
    if (meter) exchange.reading = meter.end({ complete: true, trailers: headerBagOf(trailersGiven) });
    exchange.finish(null);
  }

  onError(err: Error): void {
    this.finish(err);
  }

  /** Runs once the response is finished, or the exchange failed at any point. */
  private finish(err: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    this.endedAt ??= performance.now();
    const { proxy, res, entry } = this;
    const { context, admission } = entry;
    admission.release?.();
    let outcome: ProxyOutcome = 'forwarded';
    let status = this.status;
    let usageOutcome = backendOutcome(status);
    let answered: ErrorCode | undefined;
    if (err !== null) {
      // Unread, cut short: ending it hands a decoding meter's decoder back at once.
      this.meter?.end({ complete: false });
      usageOutcome = undefined;
      if (this.clientGone || (res.destroyed && !res.writableFinished)) {
        // The client went away (499): nobody to answer, nothing wrong with the backend, no warning;
        // usage still counts the request as failed.
        status = 499;
      } else {
        const code = (err as { code?: string }).code;
        const timedOut = code === 'UND_ERR_HEADERS_TIMEOUT';
        outcome = timedOut ? 'upstream_timeout' : 'upstream_error';
        answered = timedOut ? 'gateway_timeout' : 'bad_gateway';
        if (!res.headersSent) {
          status = timedOut ? 504 : 502;
          const own: Record<string, string> = { 'x-request-id': context.requestId };
          if (entry.cors !== undefined) addHeaders(own, entry.cors);
          sendError(res, answered, own);
        } else {
          // The body broke off mid-stream: the client sees a truncated response, never a wrong one.
          res.destroy();
          status = 502;
        }
        usageOutcome = 'backendUnreachable';
        proxy.logger.warn({ reqId: context.requestId, err: err.message, code }, 'backend request failed');
      }
    }
    proxy.metrics.proxyRequests.inc({ outcome });
    const mine = this.inFlight === undefined ? true : this.inFlight.close(this, this.inFlightSlot);
    if (mine === true) return this.count(status, usageOutcome, answered, true);
    void mine.then((taken) => this.count(status, usageOutcome, answered, taken));
  }

  /**
   * Counts the request once it is its process's to count (`mine`): else a sweep took its record and
   * counted it at its reservation, which it leaves charged.
   */
  private count(
    status: number,
    outcome: Outcome | undefined,
    answered: ErrorCode | undefined,
    mine: boolean,
  ): void {
    const { entry, reading, endedAt } = this;
    const { context, admission } = entry;
    const settlement = admission.settlement;
    const cost =
      settlement === undefined ? admission.cost : mine ? this.settle(settlement) : settlement.reserved;
    const unsettled = settlement !== undefined && !reading.settled;
    const ending = { key: admission.key, status, outcome, cost, unsettled, countedElsewhere: !mine, endedAt };
    finished(this.proxy, this.req, context, ending, answered);
  }

  /**
   * The request's cost from what its response reported (else its reservation), the difference charged
   * where the reservation was; a failure to settle leaves the reservation charged, and is logged.
   */
  private settle(settlement: PendingSettlement): number {
    const { proxy, reading } = this;
    const cost = settledCost(settlement, reading);
    if (reading.settled) proxy.metrics.settledUnits.inc(cost);
    else proxy.metrics.unsettledRequests.inc({ reason: reading.reason });
    const reservation = settlement.reservation;
    if (reservation === undefined || cost === settlement.reserved) return cost;
    // In process the limiter settles at once: no promise is made for it.
    const settling = proxy.limiter.settle(reservation, cost, proxy.clock());
    if (settling instanceof Promise)
      settling.catch((err: unknown) =>
        proxy.logger.error({ err, reqId: this.entry.context.requestId }, 'settling a request failed'),
      );
    return cost;
  }
}

export function createProxyHandler(deps: ProxyDeps): ProxyHandler {
  return (req: IncomingMessage, res: ServerResponse, target: RequestTarget | undefined): void =>
    void handle(deps, req, res, target);
}

async function handle(
  proxy: ProxyDeps,
  req: IncomingMessage,
  res: ServerResponse,
  target: RequestTarget | undefined,
): Promise<void> {
  const receivedAt = performance.now();
  const requestId = requestIdOf(req.headers);
  try {
    if (tracer !== undefined) tracer.proxied(req, requestId);
    await serve(proxy, req, res, target, requestId, receivedAt);
  } catch (err) {
    // A bug, not a backend failure (those arrive in Exchange.onError): answer 500 and keep serving.
    proxy.logger.error({ err, reqId: requestId }, 'proxy failure');
    if (!res.headersSent) sendError(res, 'internal_error', { 'x-request-id': requestId });
    else res.destroy();
    // Its trace ends here unless `finished` ended it before the failure.
    if (tracer !== undefined) tracer.finished(answeredEnd(req, 500, undefined, 'internal_error'));
  }
}

function serve(
  proxy: ProxyDeps,
  req: IncomingMessage,
  res: ServerResponse,
  target: RequestTarget | undefined,
  requestId: string,
  receivedAt: number,
): void | Promise<void> {
  const continues = expectsContinue(req);
  const continueBody = continues ? () => res.writeContinue() : undefined;
  const entering = enter(proxy, req, target, requestId, receivedAt, res, continueBody);
  // Entered from memory alone, it is answered or forwarded on this turn.
  if (entering instanceof Promise) return entering.then((entry) => answer(proxy, req, res, entry, continues));
  answer(proxy, req, res, entering, continues);
}

/** Writes Tollgate's own answer to a request not entered, or forwards an entered one to its backend. */
function answer(
  proxy: ProxyDeps,
  req: IncomingMessage,
  res: ServerResponse,
  entry: Entered | NotEntered,
  /** The client waits for `100 Continue` before its body. */
  continues: boolean,
): void {
  if (!entry.entered) {
    const refusal = entry.refusal;
    if (refusal === undefined) return;
    // The client holds its body back for our answer, or sent more than was read of it (413): the
    // rest is never read, so the connection ends.
    if (continues || refusal.status === 413) refusal.headers.connection = 'close';
    res.writeHead(refusal.status, refusal.headers);
    res.end(refusal.body, refusal.encoding ?? 'utf8');
    return;
  }
  const { context, admission } = entry;
  const route = context.route;
  const headers = backendHeaders(
    req.headers,
    backendFacts(context, admission, proxy.config.customerIdHeader),
  );
  const trailers = acceptsTrailers(req.headers);
  if (trailers) headers.push('te', 'trailers');
  const path = forwardedPath(route, context.path);
  if (tracer !== undefined) tracer.forwarding(req, headers, route.upstream.origin + path);
  // Authenticated and within its limit: now the client may send its body (unless it was asked for it
  // already, to read it before deciding).
  if (continues && admission.body === undefined) res.writeContinue();
  const inFlight = admission.settlement === undefined ? undefined : proxy.reservations?.inFlight;
  const exchange = new Exchange(proxy, req, res, entry, trailers, inFlight);
  res.on('close', exchange.onClientClose);
  proxy.metrics.proxyOverhead.observe((exchange.upstreamStartedAt - context.receivedAt) / 1000);
  route.upstream.pool.dispatch(
    {
      path: path + context.search,
      method: req.method as Dispatcher.HttpMethod,
      headers,
      // A body read to decide on it goes as it was read; any other streams through.
      body: admission.body ?? (hasBody(req) ? req : null),
      headersTimeout: route.timeoutMs,
      bodyTimeout: route.timeoutMs,
    },
    exchange,
  );
}

/** `Expect: 100-continue`: the client waits for a 100 (or a final answer) before sending its body. */
function expectsContinue(req: IncomingMessage): boolean {
  return req.headers.expect?.toLowerCase() === '100-continue';
}

/** A request carries a body when it says so; GETs without one are sent without a body stream. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
