/**
 * Tollgate's spans, made with the OpenTelemetry SDK. Only `startTracing` imports this file, and only
 * when OTEL_* names an endpoint (src/tracing/tracer.ts). What each span holds is in
 * docs/guides/tracing.md; never a secret, a token or a query string.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { ClientCall, TracedRequestEnd, Tracing } from './tracer.js';

/** The spans of one proxied request, from its arrival to `finished`. */
interface RequestSpans {
  readonly server: Span;
  readonly context: Context;
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
    private readonly propagator: TextMapPropagator,
    private readonly close: (timeoutMs: number) => Promise<void>,
  ) {}

  proxied(req: IncomingMessage, requestId: string): void {
    const parent = this.propagator.extract(ROOT_CONTEXT, req.headers, headerGetter);
    const server = this.otel.startSpan(req.method!, { kind: SpanKind.SERVER }, parent);
    // The samplers decide without attributes: a request not sampled never has them gathered.
    if (server.isRecording()) server.setAttributes(serverAttributes(req));
    // No async context is entered: the proxy's hooks pass the request, and its log lines its id.
    this.byRequest.set(req, {
      server,
      context: trace.setSpan(parent, server),
      requestId,
      backend: undefined,
    });
    if (isSampled(server)) this.byRequestId.set(requestId, server);
  }

  forwarding(req: IncomingMessage, headers: string[], url: string): void {
    const spans = this.byRequest.get(req);
    if (spans === undefined) return;
    let sent = spans.context;
    // A trace not sampled gets no CLIENT span: the backend is told of the SERVER span, unsampled.
    if (spans.server.isRecording()) {
      spans.backend = this.otel.startSpan(
        req.method!,
        {
          kind: SpanKind.CLIENT,
          attributes: { 'http.request.method': req.method, 'url.full': url.split('?', 1)[0] },
        },
        spans.context,
      );
      sent = trace.setSpan(spans.context, spans.backend);
    }
    for (let i = headers.length - 2; i >= 0; i -= 2)
      if (PROPAGATED.has(headers[i]!.toLowerCase())) headers.splice(i, 2);
    const carrier: Record<string, string> = {};
    this.propagator.inject(sent, carrier, recordSetter);
    for (const name in carrier) headers.push(name, carrier[name]!);
  }

  limiterWait<T>(decided: Promise<T>, req: IncomingMessage | undefined): Promise<T> {
    const spans = req === undefined ? undefined : this.byRequest.get(req);
    if (spans === undefined || !spans.server.isRecording()) return decided;
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
    if (this.byRequestId.get(spans.requestId) === spans.server) this.byRequestId.delete(spans.requestId);
    const { server, backend } = spans;
    if (backend !== undefined) endWithStatus(backend, end.status, end.code);
    if (server.isRecording()) {
      if (end.path !== undefined) server.setAttribute('url.path', end.path);
      if (end.keyId !== undefined) server.setAttribute('tollgate.key.id', end.keyId);
      if (end.consumerId !== undefined) server.setAttribute('tollgate.consumer.id', end.consumerId);
      if (end.routeId !== null) server.setAttribute('tollgate.route.id', end.routeId);
      server.setAttribute('tollgate.outcome', end.code ?? 'ok');
      server.setAttribute('tollgate.cost', end.cost);
    }
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
