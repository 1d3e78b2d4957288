import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { OtelTracing } from './otel-tracing.js';
import { PooledIds } from './pooled-ids.js';
import { encodeSpans } from './span-protobuf.js';

/** The proxy's hooks over a sink that keeps what ends. */
function tracing(): { hooks: OtelTracing; ended: ReadableSpan[] } {
  const ended: ReadableSpan[] = [];
  const hooks = new OtelTracing(
    new TracerProvider({}).getTracer('tollgate'),
    { resource: resourceFromAttributes({}), scope: { name: 'tollgate' }, onEnd: (s) => void ended.push(s) },
    new AlwaysOnSampler(),
    new PooledIds(),
    new W3CTraceContextPropagator(),
    true,
    () => Promise.resolve(),
  );
  return { hooks, ended };
}

describe("the proxy's request spans", () => {
  it('leave out what the request does not have: a client already gone has no address, and the batch still takes the one-pass encoder', () => {
    const { hooks, ended } = tracing();
    const req = new IncomingMessage(new Socket()); // never connected: no remote address
    req.method = 'GET';
    req.url = '/v1/items?token=hidden';
    req.headers = {};
    hooks.proxied(req, 'gone');
    const headers: string[] = [];
    hooks.forwarding(req, headers, 'http://backend/v1/items?token=hidden');
    hooks.finished({
      req,
      status: 499,
      path: '/v1/items',
      keyId: undefined,
      consumerId: undefined,
      routeId: null,
      cost: 0,
      code: undefined,
    });

    expect(ended.map((s) => s.attributes)).toEqual([
      {
        'http.request.method': 'GET',
        'url.full': 'http://backend/v1/items',
        'http.response.status_code': 499,
      },
      {
        'http.request.method': 'GET',
        'url.path': '/v1/items',
        'url.scheme': 'http',
        'tollgate.outcome': 'ok',
        'tollgate.cost': 0,
        'http.response.status_code': 499,
      },
    ]);
    expect(encodeSpans(ended)).toBeDefined();
    const [client, server] = ended;
    expect(client!.parentSpanContext).toBe(server!.spanContext());
    expect(headers).toEqual([
      'traceparent',
      `00-${server!.spanContext().traceId}-${client!.spanContext().spanId}-01`,
    ]);
  });
});
