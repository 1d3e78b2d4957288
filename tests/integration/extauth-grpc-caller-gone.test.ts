/**
 * A gateway's call whose caller is gone by the time its admission answers (a gRPC call's grpc-timeout
 * passed while Redis was slow, a forward auth connection closed) is counted as the proxy counts a
 * client that left while it was admitted (src/proxy/entry.ts): its cost charged, failed in usage
 * with status 499, its concurrency place given back, never counted a success or held for a settle
 * call nobody can make. Redis mode, with a private redis-server paused while the calls are decided.
 */
import { connect } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { checkRequest, EnvoyClient, rateLimitRequest } from '../helpers/envoy-client.js';
import { AUTHORIZATION_PROTO, LOADER_OPTIONS, RATE_LIMIT_PROTO } from '../helpers/envoy-protos.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { RedisServer } from '../helpers/redis-server.js';
import { testKeyPrefix } from '../helpers/services.js';

const definitions = loadSync([AUTHORIZATION_PROTO, RATE_LIMIT_PROTO], LOADER_OPTIONS);
const Check = (definitions['envoy.service.auth.v3.Authorization'] as ServiceDefinition).Check!;
const ShouldRateLimit = (definitions['envoy.service.ratelimit.v3.RateLimitService'] as ServiceDefinition)
  .ShouldRateLimit!;

const h = new ProxyHarness();
let redis: RedisServer;
let envoy: EnvoyClient;

beforeAll(async () => {
  redis = await RedisServer.start();
  // Redis keeps its windows until they end by the real clock.
  h.realTime = true;
  await h.start({
    env: {
      EXTAUTH_GRPC_PORT: '0',
      EXTAUTH_PORT: '0',
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: testKeyPrefix(),
      // The pause is no failure: the limiter waits it out.
      REDIS_COMMAND_TIMEOUT_MS: '10000',
      // A place not given back would still be held when the test ends.
      CONCURRENCY_LEASE_SECONDS: '600',
    },
  });
  envoy = new EnvoyClient(`127.0.0.1:${h.extauthGrpcPort}`);
}, 60_000);
afterAll(async () => {
  envoy?.close();
  redis?.resume();
  await h.stop();
  await redis?.destroy();
  await closeDatabase();
});

/** A key whose plan allows one request at a time. */
const keyOfOnePlace = () =>
  h.createKey({ name: 'minute', limit: 10, period: 'minute' }, { algorithm: 'concurrency', limit: 1 });

/** The grpc-status of a call of `path` with `message` and `grpc-timeout`. */
function statusOf(path: string, message: Buffer, timeout: string): Promise<number> {
  const session = connect(`http://127.0.0.1:${h.extauthGrpcPort}`);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return new Promise<number>((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': timeout,
    });
    let status = -1;
    stream.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) status = Number(headers['grpc-status']);
    });
    stream.on('trailers', (trailers) => (status = Number(trailers['grpc-status'])));
    stream.on('error', reject);
    stream.on('close', () => resolve(status));
    stream.resume();
    stream.end(frame);
  }).finally(() => session.close());
}

it('counts a Check, a ShouldRateLimit and a forward auth call admitted after their caller left as failed (499), charged, their places given back', async () => {
  const checked = await keyOfOnePlace();
  const limited = await keyOfOnePlace();
  const forwarded = await keyOfOnePlace();
  // Each key known to this replica, its one place given back by its settle call.
  for (const key of [checked, limited, forwarded]) {
    const admitted = await envoy.check('/orders', { 'x-api-key': key.secret });
    const reservation = admitted.ok_response.headers.find(
      (o: { header: { key: string } }) => o.header.key === 'x-tollgate-reservation',
    ).header.value;
    expect(
      (await h.admin('POST', '/tollgate/verify/settle', { reservationId: reservation, units: 1 })).status,
    ).toBe(200);
  }

  redis.pause();
  const check = Check.requestSerialize(checkRequest('/orders', { 'x-api-key': checked.secret }));
  const rateLimit = ShouldRateLimit.requestSerialize(
    rateLimitRequest('tollgate', [[['api_key', limited.secret]], [['path', '/orders']]]),
  );
  // nginx's auth_request, whose connection closes before it is decided.
  const socket = connectTcp(h.extauthPort!, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(
    `GET /auth HTTP/1.1\r\nhost: tollgate\r\nx-api-key: ${forwarded.secret}\r\nx-original-uri: /orders\r\n\r\n`,
  );
  const statuses = await Promise.all([
    statusOf('/envoy.service.auth.v3.Authorization/Check', check, '200m'),
    statusOf('/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', rateLimit, '200m'),
  ]);
  // The gateway closes its connection; the listener closing its side says it saw that.
  await new Promise((resolve) => socket.once('close', resolve).end());
  redis.resume();
  expect(statuses).toEqual([4, 4]);

  for (const key of [checked, limited, forwarded]) {
    const { value: usage } = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 2,
    );
    // The first a success; the one whose caller was gone failed, charged all the same.
    expect([usage.successful, usage.failed, usage.statusClasses['4xx'], usage.cost]).toEqual([1, 1, 1, 2]);
  }
  // Each key's one place is free: the next call is admitted.
  const again = await envoy.check('/orders', { 'x-api-key': checked.secret });
  expect(again.status.code ?? 0).toBe(0);
  const limitedAgain = await envoy.shouldRateLimit(
    rateLimitRequest('tollgate', [[['api_key', limited.secret]], [['path', '/orders']]]),
  );
  expect(limitedAgain.overall_code).toBe('OK');
  const forwardedAgain = await fetch(`http://127.0.0.1:${h.extauthPort}/auth`, {
    headers: { 'x-api-key': forwarded.secret, 'x-original-uri': '/orders' },
  });
  expect(forwardedAgain.status).toBe(200);
  expect(await h.metric('tollgate_extauth_decisions_total')).toMatch(
    /tollgate_extauth_decisions_total\{protocol="check",code="client_closed"\} 1/,
  );
});
