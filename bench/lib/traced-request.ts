// One proxied request through the built tracing hooks, as the proxy calls them: `proxied`,
// `forwarding` and `finished` on one request object. Shared by the benches of the hooks and of the export.
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { Tracing } from '../../src/tracing/tracer.ts';
import type { TracingSettings } from '../../src/tracing/tracing-settings.ts';

const socket = new Socket();

/** The settings' defaults, but a second between scheduled exports and a second's export timeout. */
export const tracingSettings = (endpoint: string, sampler: string): TracingSettings =>
  ({
    endpoint,
    protocol: 'http/protobuf',
    headers: {},
    serviceName: 'tollgate-bench',
    resourceAttributes: {},
    sampler,
    samplerRatio: 0.01,
    propagators: ['tracecontext', 'baggage'],
    maxQueueSize: 2048,
    maxExportBatchSize: 512,
    scheduleDelayMs: 1000,
    exportTimeoutMs: 1000,
    batchExportTimeoutMs: 1000,
  }) as unknown as TracingSettings;

/** `tracing` undefined: the request object alone, the control. */
export function tracedRequest(tracing: Tracing | undefined, i: number, incoming: boolean): void {
  const req = new IncomingMessage(socket);
  req.method = 'GET';
  req.url = '/bench/item?id=42';
  req.headers = {
    host: '127.0.0.1:18140',
    'user-agent': 'wrk',
    authorization: 'Bearer tg_bench',
    ...(incoming && { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
  };
  if (tracing === undefined) return;
  tracing.proxied(req, `bench-${i}`);
  const headers = ['x-api-key', 'tg_bench', 'x-forwarded-for', '127.0.0.1'];
  tracing.forwarding(req, headers, 'http://127.0.0.1:18100/bench/item');
  tracing.finished({
    req,
    status: 200,
    path: '/bench/item',
    keyId: 'key_bench',
    consumerId: undefined,
    routeId: null,
    cost: 1,
    code: undefined,
  });
}
