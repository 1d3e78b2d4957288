/**
 * A gateway's call that no decision can answer (the limiter down, REDIS_FAILURE_MODE=closed while Redis
 * is out) gets the proxy's 503 on every listener, in each protocol's terms: forward auth and Check
 * answer 503 `limit_unavailable`, ShouldRateLimit a gRPC UNAVAILABLE so that Envoy's
 * `failure_mode_deny` decides. Nothing is admitted, and usage counts each as the proxy counts its 503.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { ServiceError } from '@grpc/grpc-js';
import { EnvoyClient, rateLimitRequest } from '../helpers/envoy-client.js';
import { UNAVAILABLE_LIMITER } from '../helpers/failing-limiter.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

const h = new ProxyHarness();
let envoy: EnvoyClient;

beforeAll(async () => {
  h.realTime = true;
  await h.start({
    env: { EXTAUTH_PORT: '0', EXTAUTH_GRPC_PORT: '0', DEFAULT_RATE_LIMIT: '5/second' },
    limiter: UNAVAILABLE_LIMITER,
  });
  envoy = new EnvoyClient(`127.0.0.1:${h.extauthGrpcPort}`);
}, 60_000);
afterAll(async () => {
  envoy?.close();
  await h.stop();
  await closeDatabase();
});

it("answers the proxy's 503 on every listener when no decision can be made, and counts each as failed", async () => {
  const key = await h.createKey();
  const forwarded = await fetch(`http://127.0.0.1:${h.extauthPort}/auth`, {
    headers: { 'x-api-key': key.secret, 'x-forwarded-uri': '/orders' },
  });
  expect([forwarded.status, ((await forwarded.json()) as { code: string }).code]).toEqual([
    503,
    'limit_unavailable',
  ]);
  const checked = await envoy.check('/orders', { 'x-api-key': key.secret });
  expect([checked.status.code, checked.denied_response.status.code]).toEqual([14, 'ServiceUnavailable']);
  expect(JSON.parse(checked.denied_response.body).code).toBe('limit_unavailable');
  const limited = await envoy.shouldRateLimit(rateLimitRequest('tollgate', [[['api_key', key.secret]]])).then(
    () => 0,
    (err: ServiceError) => err.code,
  );
  expect(limited).toBe(14);
  const usage = await waitFor(
    () => h.usage(key.id),
    (u) => u.requests === 3,
  );
  expect([usage.value.successful, usage.value.failed, usage.value.statusClasses['5xx']]).toEqual([0, 3, 3]);
});
