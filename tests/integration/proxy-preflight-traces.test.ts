/**
 * A CORS preflight Tollgate answers itself is a request like any other for its trace: its SERVER span
 * ends with the answer and reaches the collector (a real OTLP receiver), and nothing of it stays
 * pending in the tracer, however many preflights come.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Metrics } from '../../src/ops/metrics.js';
import { startTracing } from '../../src/tracing/start-tracing.js';
import { setTracer, type Tracing } from '../../src/tracing/tracer.js';
import { tracingSettings } from '../../src/tracing/tracing-settings.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const PAGE = 'https://app.example.com';
const PREFLIGHTS = 1_000;
const SERVER = 2;

function preflight(port: number, requestId: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/items',
        method: 'OPTIONS',
        headers: { origin: PAGE, 'access-control-request-method': 'POST', 'x-request-id': requestId },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('preflights under tracing', () => {
  const h = new ProxyHarness();
  let receiver: OtlpReceiver;
  let tracing: Tracing;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = await startTracing(
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' })!,
      new Metrics(),
    );
    await h.start({ env: { CORS_ALLOWED_ORIGINS: PAGE } });
  }, 60_000);

  afterAll(async () => {
    await h.stop();
    await tracing?.shutdown(1_000);
    setTracer(undefined);
    await receiver?.close();
  });

  it(`ends and exports the SERVER span of each of ${PREFLIGHTS} sampled preflights, and keeps none pending`, async () => {
    const ids = Array.from({ length: PREFLIGHTS }, (_, i) => `preflight-${i}`);
    for (let i = 0; i < ids.length; i += 50) {
      const statuses = await Promise.all(ids.slice(i, i + 50).map((id) => preflight(h.port, id)));
      expect(statuses.every((status) => status === 204)).toBe(true);
    }

    // A request's span under way is what its log lines name: none of the preflights' is any longer.
    expect(ids.filter((reqId) => 'traceId' in tracing.logFields({ reqId })).length).toBe(0);

    const { value: spans } = await waitFor(
      async () => receiver.spans.filter((s) => s.kind === SERVER && s.name === 'OPTIONS'),
      (found) => found.length >= PREFLIGHTS,
    );
    expect(spans).toHaveLength(PREFLIGHTS);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(PREFLIGHTS);
    expect(spans[0]!.attributes).toMatchObject({
      'http.request.method': 'OPTIONS',
      'url.path': '/v1/items',
      'http.response.status_code': 204,
      'tollgate.outcome': 'ok',
      'tollgate.cost': 0,
    });
  }, 120_000);
});
