/**
 * The one place the request path asks whether it is traced: `tracer` is undefined unless OTEL_* names
 * an endpoint, and then it is set once at start-up by `startTracing` (src/tracing/start-tracing.ts),
 * which loads the OpenTelemetry SDK. This file imports none of it, so a Tollgate without tracing pays
 * one `tracer !== undefined` check per hook and nothing else (docs/decisions/0080-traces.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** How a proxied request ended, as its SERVER span tells it. */
export interface TracedRequestEnd {
  readonly req: IncomingMessage;
  /** What the client got (499: it left first). */
  readonly status: number;
  /** The path without its query; undefined for a request target refused before routing. */
  readonly path: string | undefined;
  readonly keyId: string | undefined;
  readonly consumerId: string | undefined;
  readonly routeId: string | null;
  readonly cost: number;
  /** The code of Tollgate's own answer (a refusal, `bad_gateway`, `gateway_timeout`); undefined: forwarded. */
  readonly code: string | undefined;
}

/**
 * The end of a request Tollgate answered before `finished` could tell more (a preflight a CORS policy
 * answers, a request that failed on a bug): no key, no route, nothing charged.
 */
export const answeredEnd = (
  req: IncomingMessage,
  status: number,
  path: string | undefined,
  code: string | undefined,
): TracedRequestEnd => ({
  req,
  status,
  path,
  keyId: undefined,
  consumerId: undefined,
  routeId: null,
  cost: 0,
  code,
});

/** A CLIENT span of a call Tollgate makes on its own (a webhook delivery, a billing-export send). */
export interface ClientCall {
  /** `traceparent` (and `tracestate`) to send, so the receiver's spans join the trace. */
  readonly headers: Readonly<Record<string, string>>;
  /** The answer's status, or `null` and why when there was none. */
  end(status: number | null, error?: string): void;
}

export interface Tracing {
  /** A proxied request arrives: its SERVER span starts, the incoming `traceparent` its parent. */
  proxied(req: IncomingMessage, requestId: string): void;
  /** The backend call starts: its CLIENT span, and `traceparent` naming it pushed onto `headers`. */
  forwarding(req: IncomingMessage, headers: string[], url: string): void;
  /** The decision on `req` waits on the shared counters (Redis): an INTERNAL span around the wait. */
  limiterWait<T>(decided: Promise<T>, req: IncomingMessage | undefined): Promise<T>;
  /** Ends the request's spans; every proxied request comes here, and only its first end counts. */
  finished(end: TracedRequestEnd): void;
  /** Express-style middleware: a management call as a SERVER span named by its path template under `prefix`. */
  management(prefix: string): (req: IncomingMessage, res: ServerResponse, next: () => void) => void;
  /** A CLIENT span named `name`; `url` is recorded without its query. */
  client(name: string, url: string, attributes: Readonly<Record<string, string>>): ClientCall;
  /** `traceId` and `spanId` for a log line written inside a traced request (a pino mixin). */
  logFields(line: object): object;
  /** Sends what is queued, within `timeoutMs`; the process never waits longer on a collector. */
  shutdown(timeoutMs: number): Promise<void>;
}

/** Undefined when tracing is off: the hooks' one check. */
export let tracer: Tracing | undefined;

export function setTracer(tracing: Tracing | undefined): void {
  tracer = tracing;
}
