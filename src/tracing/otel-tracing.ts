/**
 * Tollgate's spans, made with the OpenTelemetry SDK. Only `startTracing` imports this file, and only
 * when OTEL_* names an endpoint (src/tracing/tracer.ts). What each span holds is in
 * docs/guides/tracing.md; never a secret, a token or a query string.
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
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { ChosenTraceIds } from './chosen-trace-ids.js';
import type { ClientCall, TracedRequestEnd, Tracing } from './tracer.js';

/**
 * One proxied request's trace, from its arrival to `finished`. A request the sampler left out has no
 * span (`server` undefined): only its trace id, which its backend is told under a span id of its own.
 */
interface RequestSpans {
  readonly server: Span | undefined;
  /** The incoming trace (ROOT_CONTEXT when the client sent none), with the SERVER span when sampled. */
  readonly context: Context;
  readonly traceId: string;
  /** The client sent `traceparent`, `tracestate` or `baggage`: its copies are replaced, never sent twice. */
  readonly carried: boolean;
  readonly requestId: string;
  backend: Span | undefined;
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
    return raw.split(/[?#]/, 1)[0]!;
  }
}

/** `server.address` from a Host header: the name without its port. */
function hostName(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':', 1)[0];
}

function serverAttributes(req: IncomingMessage): Attributes {
  const attributes: Attributes = {
    'http.request.method': req.method,
    'url.path': (req.url ?? '/').split('?', 1)[0],
    'url.scheme': 'http',
    'client.address': req.socket.remoteAddress,
  };
  const host = hostName(req.headers.host);
  if (host !== undefined) attributes['server.address'] = host;
  const agent = req.headers['user-agent'];
  if (agent !== undefined) attributes['user_agent.original'] = agent;
  return attributes;
}

/** A 5xx is an error of the span, typed by Tollgate's code or the backend's status. */
function endWithStatus(span: Span, status: number, code: string | undefined): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) {
    span.setAttribute('error.type', code ?? String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** What the sampler is asked with: it decides before any attribute is gathered. */
const NO_ATTRIBUTES: Attributes = Object.freeze({});
const NO_LINKS: Link[] = [];

const isSampled = (span: Span): boolean => (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;

export class OtelTracing implements Tracing {
  /** A request's spans ride on the request itself: cheaper than a WeakMap entry per request. */
  private readonly byRequest = {
    get: (req: IncomingMessage): RequestSpans | undefined => (req as Traced)[SPANS],
    set: (req: IncomingMessage, spans: RequestSpans): void => void ((req as Traced)[SPANS] = spans),
    delete: (req: IncomingMessage): void => void ((req as Traced)[SPANS] = undefined),
  };
  /** The requests under way by request id: their log lines name only that. */
  private readonly byRequestId = new Map<string, Span>();

  constructor(
    private readonly otel: Tracer,
    /** The tracer's own sampler and ids: a request is decided on before any span is built. */
    private readonly sampler: Sampler,
    private readonly ids: ChosenTraceIds,
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
    const traceId = root ? this.ids.hex(16) : parentSpan.traceId;
    // The sampler decides first, on the trace id and the parent alone: a request left out builds no
    // span, no attributes and no context. No async context is entered either way: the proxy's hooks
    // pass the request, and its log lines its id.
    const { decision } = this.sampler.shouldSample(
      parent,
      traceId,
      req.method!,
      SpanKind.SERVER,
      NO_ATTRIBUTES,
      NO_LINKS,
    );
    if (decision === SamplingDecision.NOT_RECORD) {
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
    // The tracer makes a root span's trace id: the one just decided on.
    if (root) this.ids.chooseTraceId(traceId);
    const server = this.otel.startSpan(req.method!, { kind: SpanKind.SERVER }, parent);
    server.setAttributes(serverAttributes(req));
    this.byRequest.set(req, {
      server,
      context: trace.setSpan(parent, server),
      traceId,
      carried,
      requestId,
      backend: undefined,
    });
    if (isSampled(server)) this.byRequestId.set(requestId, server);
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
    const backend = this.otel.startSpan(req.method!, { kind: SpanKind.CLIENT }, spans.context);
    spans.backend = backend;
    backend.setAttributes({ 'http.request.method': req.method, 'url.full': url.split('?', 1)[0] });
    if (spans.carried) {
      this.inject(trace.setSpan(spans.context, backend), headers);
      return;
    }
    // A trace Tollgate began has no state or baggage to pass on: the one header, written as the
    // tracecontext propagator writes it, without a context made for it.
    if (this.sendsTraceparent) {
      const { traceId, spanId, traceFlags } = backend.spanContext();
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
    if (spans === undefined || spans.server === undefined) return decided;
    const span = this.otel.startSpan('rate limit decision', { kind: SpanKind.INTERNAL }, spans.context);
    return decided.then(
      (decision) => {
        span.end();
        return decision;
      },
      (err: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute('error.type', (err as { code?: string }).code ?? 'limiter_failure');
        span.end();
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
    if (this.byRequestId.get(spans.requestId) === server) this.byRequestId.delete(spans.requestId);
    if (backend !== undefined) endWithStatus(backend, end.status, end.code);
    if (end.path !== undefined) server.setAttribute('url.path', end.path);
    if (end.keyId !== undefined) server.setAttribute('tollgate.key.id', end.keyId);
    if (end.consumerId !== undefined) server.setAttribute('tollgate.consumer.id', end.consumerId);
    if (end.routeId !== null) server.setAttribute('tollgate.route.id', end.routeId);
    server.setAttribute('tollgate.outcome', end.code ?? 'ok');
    server.setAttribute('tollgate.cost', end.cost);
    endWithStatus(server, end.status, end.code);
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
      typeof requestId === 'string' ? this.byRequestId.get(requestId) : trace.getSpan(context.active());
    if (span === undefined || !isSampled(span)) return {};
    const { traceId, spanId } = span.spanContext();
    return { traceId, spanId };
  }

  shutdown(timeoutMs: number): Promise<void> {
    return this.close(timeoutMs);
  }
}
