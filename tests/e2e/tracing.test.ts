/**
 * Traces as an operator's OpenTelemetry backend receives them: the built server exports to a real
 * OTLP receiver that decodes both encodings with the official proto definitions, in front of a real
 * backend that records the `traceparent` it is sent; embedded and with Redis + Postgres. Then a
 * collector that hangs: requests are answered all the same, the lost spans are counted, and SIGTERM
 * still ends the process.
 */
import WebSocket from 'ws';
import { MODES, type Deployment } from './helpers/modes.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';
import {
  startOtlpReceiver,
  type CollectorAnswer,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../helpers/otlp-receiver.js';
import { waitFor } from '../helpers/poll.js';

const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;
const ERROR = 2;

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_SPAN = '00f067aa0ba902b7';

/** Exports within a tenth of a second, so a test waits for its spans briefly. */
const FAST_EXPORT = { OTEL_BSP_SCHEDULE_DELAY: '100' };

const CASES = MODES.flatMap((mode) =>
  (['http/protobuf', 'http/json'] as const).map((protocol) => ({ mode, protocol })),
);

async function spansOf(receiver: OtlpReceiver, traceId: string, count: number): Promise<ReceivedSpan[]> {
  const { value } = await waitFor(
    async () => receiver.spans.filter((s) => s.traceId === traceId),
    (spans) => spans.length >= count,
  );
  return value;
}

describe.each(CASES)('traces, $mode.name, $protocol', ({ mode, protocol }) => {
  const redis = mode.name.startsWith('Redis');
  let deployment: Deployment;
  let backend: Backend;
  let receiver: OtlpReceiver;
  let tollgate: Tollgate;
  let key: { id: string; secret: string };

  beforeAll(async () => {
    deployment = await mode.deploy();
    backend = await startBackend();
    receiver = await startOtlpReceiver();
    tollgate = await startTollgate({
      ...deployment.env,
      UPSTREAM_URL: backend.url,
      DEFAULT_RATE_LIMIT: '1000/hour',
      LOG_LEVEL: 'debug',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'gateway-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test',
      ...FAST_EXPORT,
    });
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'traced' });
    key = created.body as { id: string; secret: string };
  });

  afterAll(async () => {
    await tollgate?.stop();
    await receiver?.close();
    await backend?.close();
    await deployment?.dispose();
  });

  it('makes a forwarded request a SERVER span under the incoming traceparent, its backend call a CLIENT child the backend is told of', async () => {
    backend.received.length = 0;
    const sentMs = Date.now();
    const res = await fetch(`${tollgate.url}/v1/items/7?color=red&token=hidden`, {
      headers: {
        authorization: `Bearer ${key.secret}`,
        traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01`,
        'user-agent': 'trace-test/1',
        'x-request-id': `traced-${protocol}`,
      },
    });
    expect(res.status).toBe(200);

    const spans = await spansOf(receiver, INCOMING_TRACE, redis ? 3 : 2);
    const server = spans.find((s) => s.kind === SERVER)!;
    const client = spans.find((s) => s.kind === CLIENT)!;
    expect(server.parentSpanId).toBe(INCOMING_SPAN);
    expect(client.parentSpanId).toBe(server.spanId);
    // On the wall clock, after the client sent it (to the millisecond a span's start is read at);
    // every child inside its SERVER span.
    expect(server.startMs).toBeGreaterThanOrEqual(sentMs);
    for (const child of spans.filter((s) => s !== server)) {
      expect(child.startMs).toBeGreaterThanOrEqual(server.startMs);
      expect(child.endMs).toBeGreaterThanOrEqual(child.startMs);
      expect(child.endMs).toBeLessThanOrEqual(server.endMs);
    }
    // The backend is told of the CLIENT span, so its own spans join the trace.
    expect(backend.received[0]!.headers.traceparent).toBe(`00-${INCOMING_TRACE}-${client.spanId}-01`);
    expect(server.attributes).toEqual(
      expect.objectContaining({
        'http.request.method': 'GET',
        'url.path': '/v1/items/7',
        'url.scheme': 'http',
        'server.address': '127.0.0.1',
        'client.address': '127.0.0.1',
        'user_agent.original': 'trace-test/1',
        'http.response.status_code': 200,
        'tollgate.key.id': key.id,
        'tollgate.outcome': 'ok',
        'tollgate.cost': 1,
      }),
    );
    expect(client.attributes['url.full']).toBe(`${backend.url}/v1/items/7`);
    expect(server.resource).toEqual(
      expect.objectContaining({ 'service.name': 'gateway-under-test', 'deployment.environment': 'test' }),
    );
    // With Redis the decision waited on it: an INTERNAL span of the SERVER span; embedded, none.
    const waits = spans.filter((s) => s.kind === INTERNAL);
    expect(waits.map((s) => [s.name, s.parentSpanId])).toEqual(
      redis ? [['rate limit decision', server.spanId]] : [],
    );
    // No secret, token or query string in anything exported.
    const exported = Buffer.concat(receiver.exports.map((e) => e.body)).toString('latin1');
    for (const leak of [key.secret, tollgate.rootToken, 'color=red', 'hidden'])
      expect(exported.includes(leak)).toBe(false);
    expect(new Set(receiver.exports.map((e) => e.contentType.split(';')[0]))).toEqual(
      new Set([protocol === 'http/json' ? 'application/json' : 'application/x-protobuf']),
    );

    // The request's log line names its trace and SERVER span.
    const line = tollgate.output
      .filter((l) => l.includes(`"reqId":"traced-${protocol}"`))
      .map((l) => JSON.parse(l) as { traceId?: string; spanId?: string })[0];
    expect(line).toEqual(expect.objectContaining({ traceId: INCOMING_TRACE, spanId: server.spanId }));
  });

  it("marks Tollgate's own refusal and a backend's 5xx as the answer they were", async () => {
    const refused = await fetch(`${tollgate.url}/v1/items`, { headers: { 'x-request-id': 'refused' } });
    expect(refused.status).toBe(401);
    const failing = await fetch(`${tollgate.url}/status/503`, {
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(failing.status).toBe(503);

    const { value } = await waitFor(
      async () => receiver.spans.filter((s) => s.kind === SERVER && s.attributes['url.path'] !== undefined),
      (spans) =>
        spans.some((s) => s.attributes['tollgate.outcome'] === 'missing_api_key') &&
        spans.some((s) => s.attributes['url.path'] === '/status/503'),
    );
    const refusal = value.find((s) => s.attributes['tollgate.outcome'] === 'missing_api_key')!;
    expect(refusal.attributes['http.response.status_code']).toBe(401);
    expect(refusal.statusCode).not.toBe(ERROR);
    const backendError = value.find((s) => s.attributes['url.path'] === '/status/503')!;
    expect(backendError.attributes).toEqual(
      expect.objectContaining({
        'http.response.status_code': 503,
        'error.type': '503',
        'tollgate.outcome': 'ok',
      }),
    );
    expect(backendError.statusCode).toBe(ERROR);
  });

  it('makes a WebSocket upgrade a SERVER span answered 101, its handshake with the backend a CLIENT child the backend is told of', async () => {
    backend.received.length = 0;
    const trace = INCOMING_TRACE.replace(/^4/, '5');
    const ws = new WebSocket(`${tollgate.url.replace('http', 'ws')}/v1/stream?ticket=hidden`, {
      headers: {
        authorization: `Bearer ${key.secret}`,
        traceparent: `00-${trace}-${INCOMING_SPAN}-01`,
      },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const echoed = new Promise((resolve) => ws.once('message', (data) => resolve(String(data))));
    ws.send('ping');
    expect(await echoed).toBe('ping');

    const spans = await spansOf(receiver, trace, redis ? 3 : 2);
    const server = spans.find((s) => s.kind === SERVER)!;
    const client = spans.find((s) => s.kind === CLIENT)!;
    ws.close();
    expect(server.parentSpanId).toBe(INCOMING_SPAN);
    expect(client.parentSpanId).toBe(server.spanId);
    expect(backend.received[0]!.headers.upgrade).toBe('websocket');
    expect(backend.received[0]!.headers.traceparent).toBe(`00-${trace}-${client.spanId}-01`);
    expect(server.attributes).toEqual(
      expect.objectContaining({
        'http.request.method': 'GET',
        'url.path': '/v1/stream',
        'http.response.status_code': 101,
        'tollgate.key.id': key.id,
        'tollgate.outcome': 'ok',
        'tollgate.cost': 1,
      }),
    );
    expect(client.attributes['url.full']).toBe(`${backend.url}/v1/stream`);
    const exported = Buffer.concat(receiver.exports.map((e) => e.body)).toString('latin1');
    for (const leak of [key.secret, 'ticket=hidden']) expect(exported.includes(leak)).toBe(false);
  });

  it('makes a management call a SERVER span named by its path template', async () => {
    const res = await tollgate.admin('GET', `/consumer-api-key/${key.id}`);
    expect(res.status).toBe(200);
    const { value } = await waitFor(
      async () => receiver.spans.filter((s) => s.kind === SERVER && s.attributes['http.route'] !== undefined),
      (spans) => spans.some((s) => s.attributes['url.path'] === `/consumer-api-key/${key.id}`),
    );
    const span = value.find((s) => s.attributes['url.path'] === `/consumer-api-key/${key.id}`)!;
    expect(span.name).toBe(`GET ${span.attributes['http.route']}`);
    expect(span.attributes['http.route']).not.toContain(key.id);
    expect(span.attributes['http.response.status_code']).toBe(200);
  });
});

/** An embedded Tollgate exporting to a receiver of its own, in front of a backend of its own, for one describe. */
function tracedTollgate(env: Record<string, string>, answer: CollectorAnswer = 200) {
  const set = {} as { backend: Backend; receiver: OtlpReceiver; tollgate: Tollgate };
  beforeAll(async () => {
    set.backend = await startBackend();
    set.receiver = await startOtlpReceiver();
    set.receiver.answer = answer;
    set.tollgate = await startTollgate({
      UPSTREAM_URL: set.backend.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: set.receiver.url,
      ...FAST_EXPORT,
      ...env,
    });
  });
  afterAll(async () => {
    await set.tollgate?.stop();
    await set.receiver?.close();
    await set.backend?.close();
  });
  return set;
}

/** `tollgate_trace_spans_dropped_total` by reason, 0 for a reason not yet counted. */
async function droppedSpans(tollgate: Tollgate): Promise<Record<'queue_full' | 'export_failed', number>> {
  const metrics = await (await fetch(`${tollgate.opsUrl}/metrics`)).text();
  const count = (reason: string) =>
    Number(
      new RegExp(`^tollgate_trace_spans_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(
        metrics,
      )?.[1] ?? 0,
    );
  return { queue_full: count('queue_full'), export_failed: count('export_failed') };
}

describe('a collector that hangs', () => {
  const EXPORT_TIMEOUT_MS = 250;
  const set = tracedTollgate(
    {
      OTEL_BSP_MAX_QUEUE_SIZE: '4',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2',
      OTEL_EXPORTER_OTLP_TIMEOUT: String(EXPORT_TIMEOUT_MS),
    },
    'hang',
  );

  it('is sent one export at a time, the next once the last timed out', async () => {
    const { receiver, tollgate } = set;
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'one at a time' });
    const secret = (created.body as { secret: string }).secret;
    const started = performance.now();
    // A full batch waits at every request: exports are started as soon as one may be.
    while (performance.now() - started < 8 * EXPORT_TIMEOUT_MS) {
      const res = await fetch(`${tollgate.url}/v1/busy`, { headers: { authorization: `Bearer ${secret}` } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const elapsed = performance.now() - started;
    // One export under way at a time: at most one more than the timeouts that fit. The SDK's processor
    // alone doubled the exports under way at each timeout (1, 2, 4, ...).
    expect(receiver.exports.length).toBeGreaterThanOrEqual(2);
    expect(receiver.exports.length).toBeLessThanOrEqual(Math.floor(elapsed / EXPORT_TIMEOUT_MS) + 1);
    expect((await droppedSpans(tollgate)).export_failed).toBeGreaterThan(0);
  });

  it('answers every request, counts the spans it could not keep, and still stops on SIGTERM', async () => {
    const { receiver, tollgate } = set;
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'hung collector' });
    const secret = (created.body as { secret: string }).secret;
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${tollgate.url}/v1/n/${i}`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    expect(receiver.exports.length).toBeGreaterThan(0);
    expect((await droppedSpans(tollgate)).queue_full).toBeGreaterThan(0);

    const stopping = performance.now();
    expect(await tollgate.stop()).toBe(0);
    expect(performance.now() - stopping).toBeLessThan(10_000 + 5_000);
  });
});

describe.each([
  { collector: 'refuses (403)', answer: 403 },
  { collector: 'answers 503, a status the exporter retries', answer: 503 },
  { collector: 'is down', answer: 'down' },
] as const)('a collector that $collector', ({ answer }) => {
  const EXPORT_TIMEOUT_MS = 1_000;
  const set = tracedTollgate(
    { OTEL_EXPORTER_OTLP_TIMEOUT: String(EXPORT_TIMEOUT_MS) },
    answer === 'down' ? 200 : answer,
  );

  it('answers every request and counts each span it could not deliver, once', async () => {
    const { receiver, tollgate } = set;
    if (answer === 'down') await receiver.close();
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'undelivered' });
    const secret = (created.body as { secret: string }).secret;
    const REQUESTS = 40;
    for (let i = 0; i < REQUESTS; i++) {
      const res = await fetch(`${tollgate.url}/v1/n/${i}`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    // The key's creation is a span, and each request two: its SERVER span and its backend call.
    const spans = 1 + 2 * REQUESTS;
    await waitFor(
      () => droppedSpans(tollgate),
      (dropped) => dropped.export_failed + dropped.queue_full >= spans,
      { timeoutMs: 20_000 },
    );
    // Counted once: an export retried, or given up while under way, is not counted again later. The
    // batches go out one at a time: once a later request's two spans are counted, earlier ones are done.
    const marker = await fetch(`${tollgate.url}/v1/marker`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    await marker.arrayBuffer();
    await waitFor(
      () => droppedSpans(tollgate),
      (dropped) => dropped.export_failed + dropped.queue_full >= spans + 2,
      { timeoutMs: 20_000, what: 'the spans of a later request counted' },
    );
    expect(await droppedSpans(tollgate)).toEqual({ queue_full: 0, export_failed: spans + 2 });
    if (answer !== 'down') expect(receiver.exports.length).toBeGreaterThan(0);
  });
});

describe('a request the sampler leaves out', () => {
  const set = tracedTollgate({ LOG_LEVEL: 'debug', OTEL_TRACES_SAMPLER: 'always_off' });

  it('still carries its trace to the backend, unsampled, and exports nothing', async () => {
    const { backend, receiver, tollgate } = set;
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'unsampled' });
    const res = await fetch(`${tollgate.url}/v1/quiet`, {
      headers: {
        authorization: `Bearer ${(created.body as { secret: string }).secret}`,
        traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-00`,
        'x-request-id': 'unsampled',
      },
    });
    expect(res.status).toBe(200);
    const sent = backend.received.at(-1)!.headers.traceparent as string;
    expect(sent).toMatch(new RegExp(`^00-${INCOMING_TRACE}-[0-9a-f]{16}-00$`));
    expect(sent).not.toContain(INCOMING_SPAN);
    const { value: line } = await waitFor(
      async () => tollgate.output.find((l) => l.includes('"reqId":"unsampled"')),
      (found) => found !== undefined,
    );
    expect(JSON.parse(line!)).not.toHaveProperty('traceId');
    // A request that brings no trace starts one, unsampled, all the same.
    const root = await fetch(`${tollgate.url}/v1/quiet`, {
      headers: { authorization: `Bearer ${(created.body as { secret: string }).secret}` },
    });
    expect(root.status).toBe(200);
    expect(backend.received.at(-1)!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    // SIGTERM sends whatever is queued: nothing was.
    expect(await tollgate.stop()).toBe(0);
    expect(receiver.exports).toEqual([]);
  });
});

afterAll(() => expectNoSecretsLogged());
