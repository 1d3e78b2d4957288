/**
 * Tollgate's spans: a proxied request's built when they end (request-span.ts), the others made by
 * the OpenTelemetry SDK's tracer, all through the SDK's sampler, ids and batch processor. Only
 * `startTracing` imports this file, and only when OTEL_* names an endpoint (src/tracing/tracer.ts).
 * What each span holds is in docs/guides/tracing.md; never a secret, a token or a query string.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  context,
  ROOT_CONTEXT,
  SamplingDecision,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Sampler,
  type Span,
  type SpanContext,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { PooledIds } from './pooled-ids.js';
import { RequestClock, RequestSpan, type SpanSink, type SpanStart } from './request-span.js';
import type { ClientCall, TracedRequestEnd, Tracing } from './tracer.js';

/**
 * One proxied request's trace, from its arrival to `finished`. A request the sampler left out has no
 * span (`server` undefined): only its trace id, which its backend is told under a span id of its own.
 */
interface RequestSpans {
  readonly server: SpanStart | undefined;
  /** The incoming trace: ROOT_CONTEXT when the client sent none. */
  readonly context: Context;
  readonly traceId: string;
  /** The client sent `traceparent`, `tracestate` or `baggage`: its copies are replaced, never sent twice. */
  readonly carried: boolean;
  readonly requestId: string;
  backend: SpanStart | undefined;
}

const SPANS = Symbol('tollgate trace spans');
type Traced = IncomingMessage & { [SPANS]?: RequestSpans | undefined };

const headerGetter = {
  keys: (carrier: IncomingMessage['headers']) => Object.keys(carrier),
  get: (carrier: IncomingMessage['headers'], key: string) => carrier[key],
};
const recordSetter = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value;
  },
};

/** The headers the propagators write: an incoming copy is replaced, never sent twice. */
const PROPAGATED = new Set(['traceparent', 'tracestate', 'baggage']);

/** `url.full` of a call Tollgate makes: no query, no fragment, no user or password. */
export function urlWithoutSecrets(raw: string): string {
  try {
    const url = new URL(raw);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.href;
  } catch {
    // Not a URL the parser takes (a hand-written webhook address): still cut where a query would begin.
    return raw.split(/[?#]/, 1)[0]!;
  }
}

/** `server.address` from a Host header: the name without its port. */
function hostName(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':', 1)[0];
}

/** The SERVER span's attributes from the request; none undefined (a client gone has no address). */
function serverAttributes(req: IncomingMessage): Attributes {
  const attributes: Attributes = {
    'http.request.method': req.method,
    'url.path': (req.url ?? '/').split('?', 1)[0],
    'url.scheme': 'http',
  };
  const client = req.socket.remoteAddress;
  if (client !== undefined) attributes['client.address'] = client;
  const host = hostName(req.headers.host);
  if (host !== undefined) attributes['server.address'] = host;
  const agent = req.headers['user-agent'];
  if (agent !== undefined) attributes['user_agent.original'] = agent;
  return attributes;
}

/**
 * The answer's status among `attributes`; a 5xx is an error, typed by Tollgate's code or the backend's
 * status. True when it is one.
 */
function withStatus(attributes: Attributes, status: number, code: string | undefined): boolean {
  attributes['http.response.status_code'] = status;
  if (status < 500) return false;
  attributes['error.type'] = code ?? String(status);
  return true;
}

function endWithStatus(span: Span, status: number, code: string | undefined): void {
  const attributes: Attributes = {};
  if (withStatus(attributes, status, code)) span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttributes(attributes);
  span.end();
}

/** What the sampler is asked with: it decides before any attribute is gathered. */
const NO_ATTRIBUTES: Attributes = Object.freeze({});
const NO_LINKS: Link[] = [];

const isSampled = (context: SpanContext): boolean => (context.traceFlags & TraceFlags.SAMPLED) !== 0;

export class OtelTracing implements Tracing {
  /** A request's spans ride on the request itself: cheaper than a WeakMap entry per request. */
  private readonly byRequest = {
    get: (req: IncomingMessage): RequestSpans | undefined => (req as Traced)[SPANS],
    set: (req: IncomingMessage, spans: RequestSpans): void => void ((req as Traced)[SPANS] = spans),
    delete: (req: IncomingMessage): void => void ((req as Traced)[SPANS] = undefined),
  };
  /** The SERVER spans under way by request id: their log lines name only that. */
  private readonly byRequestId = new Map<string, SpanContext>();

  constructor(
    private readonly otel: Tracer,
    /** Where the proxy's spans go when they end: the batch processor the tracer's spans go to. */
    private readonly sink: SpanSink,
    /** The tracer's sampler and ids, which the proxy's own spans use too. */
    private readonly sampler: Sampler,
    private readonly ids: PooledIds,
    private readonly propagator: TextMapPropagator,
    /** `tracecontext` is among the propagators: a backend is sent `traceparent`. */
    private readonly sendsTraceparent: boolean,
    private readonly close: (timeoutMs: number) => Promise<void>,
  ) {}

  proxied(req: IncomingMessage, requestId: string): void {
    const headers = req.headers;
    const carried =
      headers.traceparent !== undefined || headers.tracestate !== undefined || headers.baggage !== undefined;
    const parent = carried ? this.propagator.extract(ROOT_CONTEXT, headers, headerGetter) : ROOT_CONTEXT;
    const parentSpan = carried ? trace.getSpanContext(parent) : undefined;
    const root = parentSpan === undefined || !trace.isSpanContextValid(parentSpan);
    const traceId = root ? this.ids.generateTraceId() : parentSpan.traceId;
    // The sampler decides first, on the trace id and the parent alone: a request left out builds no
    // span, no attributes and no context. No async context is entered either way: the proxy's hooks
    // pass the request, and its log lines its id.
    const sampled = this.sampler.shouldSample(
      parent,
      traceId,
      req.method!,
      SpanKind.SERVER,
      NO_ATTRIBUTES,
      NO_LINKS,
    );
    if (sampled.decision === SamplingDecision.NOT_RECORD) {
      this.byRequest.set(req, {
        server: undefined,
        context: parent,
        traceId,
        carried,
        requestId,
        backend: undefined,
      });
      return;
    }
    const clock = new RequestClock();
    const server: SpanStart = {
      context: {
        traceId,
        spanId: this.ids.generateSpanId(),
        traceFlags:
          sampled.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE,
        traceState: sampled.traceState ?? parentSpan?.traceState,
      },
      parent: root ? undefined : parentSpan,
      clock,
      atMs: clock.startMs,
      attributes: serverAttributes(req),
    };
    this.byRequest.set(req, {
      server,
      context: parent,
      traceId,
      carried,
      requestId,
      backend: undefined,
    });
    if (isSampled(server.context)) this.byRequestId.set(requestId, server.context);
  }

  /**
   * A span that begins now under the request's SERVER span, sampled as it is: each sampler
   * OTEL_TRACES_SAMPLER names decides a child of a sampled span (or of its trace id) the same way.
   */
  private child(server: SpanStart, attributes: Attributes): SpanStart {
    return {
      context: { ...server.context, spanId: this.ids.generateSpanId() },
      parent: server.context,
      clock: server.clock,
      atMs: performance.now(),
      attributes,
    };
  }

  forwarding(req: IncomingMessage, headers: string[], url: string): void {
    const spans = this.byRequest.get(req);
    if (spans === undefined) return;
    if (spans.carried)
      for (let i = headers.length - 2; i >= 0; i -= 2)
        if (PROPAGATED.has(headers[i]!.toLowerCase())) headers.splice(i, 2);
    if (spans.server === undefined) {
      // Not sampled: the backend is told of the trace under a span id of Tollgate's, unsampled.
      if (!spans.carried) {
        if (this.sendsTraceparent)
          headers.push('traceparent', `00-${spans.traceId}-${this.ids.generateSpanId()}-00`);
        return;
      }
      const parent = trace.getSpanContext(spans.context);
      this.inject(
        trace.setSpanContext(spans.context, {
          traceId: spans.traceId,
          spanId: this.ids.generateSpanId(),
          traceFlags: TraceFlags.NONE,
          ...(parent?.traceState !== undefined && { traceState: parent.traceState }),
        }),
        headers,
      );
      return;
    }
    const backend = this.child(spans.server, {
      'http.request.method': req.method,
      'url.full': url.split('?', 1)[0],
    });
    spans.backend = backend;
    if (spans.carried) {
      this.inject(trace.setSpanContext(spans.context, backend.context), headers);
      return;
    }
    // A trace Tollgate began has no state or baggage to pass on: the one header, written as the
    // tracecontext propagator writes it, without a context made for it.
    if (this.sendsTraceparent) {
      const { traceId, spanId, traceFlags } = backend.context;
      headers.push('traceparent', `00-${traceId}-${spanId}-0${traceFlags & TraceFlags.SAMPLED}`);
    }
  }

  /** Pushes the headers the propagators write for `sent` onto `headers`. */
  private inject(sent: Context, headers: string[]): void {
    const carrier: Record<string, string> = {};
    this.propagator.inject(sent, carrier, recordSetter);
    for (const name in carrier) headers.push(name, carrier[name]!);
  }

  limiterWait<T>(decided: Promise<T>, req: IncomingMessage | undefined): Promise<T> {
    const spans = req === undefined ? undefined : this.byRequest.get(req);
    if (spans?.server === undefined) return decided;
    const wait = this.child(spans.server, {});
    const end = (failed: boolean) =>
      this.end('rate limit decision', SpanKind.INTERNAL, wait, performance.now(), failed);
    return decided.then(
      (decision) => {
        end(false);
        return decision;
      },
      (err: unknown) => {
        wait.attributes['error.type'] = (err as { code?: string }).code ?? 'limiter_failure';
        end(true);
        throw err;
      },
    );
  }

  finished(end: TracedRequestEnd): void {
    const spans = this.byRequest.get(end.req);
    if (spans === undefined) return;
    this.byRequest.delete(end.req);
    const { server, backend } = spans;
    if (server === undefined) return;
    if (this.byRequestId.get(spans.requestId) === server.context) this.byRequestId.delete(spans.requestId);
    const endMs = performance.now();
    const name = end.req.method!;
    if (backend !== undefined)
      this.end(name, SpanKind.CLIENT, backend, endMs, withStatus(backend.attributes, end.status, end.code));
    const attributes = server.attributes;
    if (end.path !== undefined) attributes['url.path'] = end.path;
    if (end.keyId !== undefined) attributes['tollgate.key.id'] = end.keyId;
    if (end.consumerId !== undefined) attributes['tollgate.consumer.id'] = end.consumerId;
    if (end.routeId !== null) attributes['tollgate.route.id'] = end.routeId;
    attributes['tollgate.outcome'] = end.code ?? 'ok';
    attributes['tollgate.cost'] = end.cost;
    this.end(name, SpanKind.SERVER, server, endMs, withStatus(attributes, end.status, end.code));
  }

  /** Hands a request span that ended at `endMs` to the batch processor. */
  private end(name: string, kind: SpanKind, start: SpanStart, endMs: number, failed: boolean): void {
    this.sink.onEnd(new RequestSpan(this.sink, name, kind, start, endMs, failed));
  }

  management(prefix: string) {
    return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
      const parent = this.propagator.extract(ROOT_CONTEXT, req.headers, headerGetter);
      const span = this.otel.startSpan(
        req.method!,
        { kind: SpanKind.SERVER, attributes: serverAttributes(req) },
        parent,
      );
      res.once('close', () => {
        // Express has matched the operation by now: its path template names the span.
        const template = (req as { route?: { path?: unknown } }).route?.path;
        if (typeof template === 'string') {
          const route = prefix + template;
          span.updateName(`${req.method} ${route}`);
          span.setAttribute('http.route', route);
        }
        endWithStatus(span, res.statusCode, undefined);
      });
      context.with(trace.setSpan(parent, span), next);
    };
  }

  client(name: string, url: string, attributes: Readonly<Record<string, string>>): ClientCall {
    const parent = context.active();
    const span = this.otel.startSpan(
      name,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'http.request.method': 'POST', 'url.full': urlWithoutSecrets(url), ...attributes },
      },
      parent,
    );
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(parent, span), headers, recordSetter);
    return {
      headers,
      end(status: number | null, error?: string): void {
        if (status !== null) span.setAttribute('http.response.status_code', status);
        if (status === null || status >= 400) {
          span.setAttribute('error.type', status === null ? (error ?? 'no answer') : String(status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }

  logFields(line: object): object {
    const requestId = (line as { reqId?: unknown }).reqId;
    const span =
      typeof requestId === 'string'
        ? this.byRequestId.get(requestId)
        : trace.getSpan(context.active())?.spanContext();
    if (span === undefined || !isSampled(span)) return {};
    return { traceId: span.traceId, spanId: span.spanId };
  }

  shutdown(timeoutMs: number): Promise<void> {
    return this.close(timeoutMs);
  }
}
