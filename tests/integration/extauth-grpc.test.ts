/**
 * Envoy's gRPC services on EXTAUTH_GRPC_PORT, called with a client built from Envoy's own .proto files
 * (protos/), with the messages Envoy sends: ext_authz's Check (attributes.request.http and
 * attributes.source.address) and the rate limit filter's ShouldRateLimit (descriptors and
 * hits_addend). The proxy's decision and answers, counted in usage as the proxy counts. Both modes.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ServiceError } from '@grpc/grpc-js';
import { EnvoyClient, rateLimitRequest, type Message } from '../helpers/envoy-client.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const headerMap = (options: { header: { key: string; value: string } }[] = []) =>
  Object.fromEntries(options.map(({ header }) => [header.key, header.value]));

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  let envoy: EnvoyClient;

  beforeAll(async () => {
    stop = await mode.start(h, { env: { EXTAUTH_GRPC_PORT: '0' } });
    // A minute that has not begun: Redis keeps its windows until they end by the real clock.
    h.now = (Math.floor(Date.now() / 60_000) + 1) * 60_000 + 10;
    envoy = new EnvoyClient(`127.0.0.1:${h.extauthGrpcPort}`);
  }, 60_000);
  afterAll(async () => {
    envoy?.close();
    await stop?.();
  });

  const checked = (target: string, headers: Record<string, string>) => envoy.check(target, headers);
  const limited = (request: Message) => envoy.shouldRateLimit(request);

  it('Check admits with ok_response: the headers for the backend, Authorization removed, RateLimit for the client; usage counts the path without its query', async () => {
    const key = await h.createKey({ limit: 5, period: 'minute' });
    const response = await checked('/orders/7?page=2', { authorization: `Bearer ${key.secret}` });
    expect(response.status.code ?? 0).toBe(0);
    expect(headerMap(response.ok_response.headers)).toEqual({
      'x-api-key': key.secret,
      'x-consumer-api-key-id': key.id,
    });
    expect(response.ok_response.headers[0].append_action).toBe('OVERWRITE_IF_EXISTS_OR_ADD');
    expect(response.ok_response.headers_to_remove).toEqual(['authorization']);
    expect(headerMap(response.ok_response.response_headers_to_add)).toEqual({
      'ratelimit-policy': '"minute";q=5;w=60',
      ratelimit: expect.stringMatching(/^"minute";r=4;t=\d+$/),
    });
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 1,
    );
    expect([usage.value.successful, usage.value.endpoints]).toEqual([1, ['/orders/7']]);
  });

  it("Check denies with the proxy's status, headers and body: 401 without a key, 429 over the limit with Retry-After", async () => {
    const missing = await checked('/a', {});
    expect([missing.status.code, missing.denied_response.status.code]).toEqual([16, 'Unauthorized']);
    expect(headerMap(missing.denied_response.headers)['www-authenticate']).toBe('Bearer');
    expect(JSON.parse(missing.denied_response.body).code).toBe('missing_api_key');

    const key = await h.createKey({ limit: 1, period: 'minute' });
    await checked('/a', { 'x-api-key': key.secret });
    const over = await checked('/a', { 'x-api-key': key.secret });
    expect([over.status.code, over.denied_response.status.code]).toEqual([8, 'TooManyRequests']);
    expect(headerMap(over.denied_response.headers)).toEqual(
      expect.objectContaining({
        'retry-after': expect.stringMatching(/^\d+$/),
        ratelimit: expect.stringMatching(/^"minute";r=0;t=\d+$/),
      }),
    );
    expect(JSON.parse(over.denied_response.body)).toEqual(
      expect.objectContaining({ code: 'rate_limit_exceeded', limit: 1 }),
    );
  });

  it('refuses a path or method no request line could carry (a control character, a head too long) with 400 invalid_request_target, before it reaches usage; an address that is not one is no address', async () => {
    const key = await h.createKey({ limit: 50, period: 'minute' });
    const auth = { 'x-api-key': key.secret };
    for (const target of ['/a\u0000b', '/a\nb', '/' + 'a'.repeat(9_000)]) {
      const refused = await checked(target, auth);
      expect([refused.denied_response.status.code, JSON.parse(refused.denied_response.body).code]).toEqual([
        'BadRequest',
        'invalid_request_target',
      ]);
    }
    const badMethod = await limited(
      rateLimitRequest('tollgate', [[['api_key', key.secret]], [['method', 'G\u0000T']]]),
    );
    expect([badMethod.overall_code, JSON.parse(badMethod.raw_body.toString()).code]).toEqual([
      'OVER_LIMIT',
      'invalid_request_target',
    ]);
    const garbled = await limited(
      rateLimitRequest('tollgate', [[['api_key', key.secret]], [['remote_address', 'not\u0000an address']]]),
    );
    expect(garbled.overall_code).toBe('OK');
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 1,
    );
    expect([usage.value.successful, usage.value.endpoints]).toEqual([1, ['(gateway)']]);
  });

  it("ShouldRateLimit decides the api_key descriptor's key at cost hits_addend: OK, then OVER_LIMIT with the limit's status, Retry-After and the 429 body", async () => {
    const key = await h.createKey({ limit: 5, period: 'minute' });
    const entries: [string, string][][] = [
      [['api_key', key.secret]],
      [
        ['path', '/reports?year=2026'],
        ['method', 'POST'],
      ],
    ];
    const first = await limited(rateLimitRequest('tollgate', entries, 2));
    const second = await limited(rateLimitRequest('tollgate', entries, 2));
    const third = await limited(rateLimitRequest('tollgate', entries, 2));
    expect([first.overall_code, second.overall_code, third.overall_code]).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(second.statuses[0]).toEqual({
      code: 'OK',
      current_limit: { name: 'minute', requests_per_unit: 5, unit: 'MINUTE' },
      limit_remaining: 1,
      duration_until_reset: expect.objectContaining({ seconds: expect.any(Number) }),
    });
    expect(third.statuses.map((s: Message) => s.code)).toEqual(['OVER_LIMIT', 'OK']);
    expect(third.statuses[0].limit_remaining).toBe(1);
    const added = Object.fromEntries(
      third.response_headers_to_add.map((h: { key: string; value: string }) => [h.key, h.value]),
    );
    expect(added).toEqual(
      expect.objectContaining({
        'retry-after': expect.stringMatching(/^\d+$/),
        ratelimit: expect.stringMatching(/^"minute";r=1;t=\d+$/),
      }),
    );
    expect(JSON.parse(Buffer.from(third.raw_body).toString()).code).toBe('rate_limit_exceeded');
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 3,
    );
    expect([usage.value.successful, usage.value.failed, usage.value.cost, usage.value.endpoints]).toEqual([
      2,
      1,
      4,
      ['/reports'],
    ]);
  });

  it('ShouldRateLimit: an unknown key is OVER_LIMIT with the 401 body; another domain and a call naming no key are OK, uncounted', async () => {
    const unknown = await limited(
      rateLimitRequest('tollgate', [[['api_key', 'tg_' + randomBytes(32).toString('base64url')]]]),
    );
    expect(unknown.overall_code).toBe('OVER_LIMIT');
    expect(JSON.parse(Buffer.from(unknown.raw_body).toString()).code).toBe('invalid_api_key');

    const key = await h.createKey({ limit: 1, period: 'minute' });
    const elsewhere = await limited(rateLimitRequest('another', [[['api_key', key.secret]]]));
    const keyless = await limited(rateLimitRequest('tollgate', [[['remote_address', '198.51.100.7']]]));
    expect([elsewhere.overall_code, keyless.overall_code]).toEqual(['OK', 'OK']);
    // Neither charged the key's one request a minute.
    const own = await limited(rateLimitRequest('tollgate', [[['api_key', key.secret]]]));
    expect(own.overall_code).toBe('OK');
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests >= 1,
    );
    await h.flushed();
    expect((await h.usage(key.id)).requests).toBe(usage.value.requests);
    expect(usage.value.requests).toBe(1);
  });

  it("ShouldRateLimit: an api_key entry whose empty value is not on the wire (as Envoy's encoder writes it) is an unknown key: OVER_LIMIT with the 401 body", async () => {
    // No `value`: the client writes the entry's key alone, as proto3's encoders do for "".
    const valueless = await limited({ domain: 'tollgate', descriptors: [{ entries: [{ key: 'api_key' }] }] });
    expect(valueless.overall_code).toBe('OVER_LIMIT');
    expect(JSON.parse(Buffer.from(valueless.raw_body).toString()).code).toBe('invalid_api_key');
  });

  it('ShouldRateLimit refuses a cost over 10,000 with a gRPC error, never a decision', async () => {
    const key = await h.createKey({ limit: 5, period: 'minute' });
    const codeOf = (request: Message) =>
      limited(request).then(
        () => 0,
        (err: ServiceError) => err.code,
      );
    expect(await codeOf(rateLimitRequest('tollgate', [[['api_key', key.secret]]], 10_001))).toBe(3);
  });

  it("ShouldRateLimit's call when a stream is done (generic_key tollgate-settle) adds hits_addend, never refuses, and counts cost, not a request", async () => {
    const key = await h.createKey({ limit: 10, period: 'minute' });
    const request: [string, string][][] = [[['api_key', key.secret]], [['path', '/v1/chat']]];
    const streamDone = [...request, [['generic_key', 'tollgate-settle'] as [string, string]]];
    expect((await limited(rateLimitRequest('tollgate', request, 1))).overall_code).toBe('OK');
    // The stream used 25: past the limit, and still OK (the request was served).
    const done = await limited(rateLimitRequest('tollgate', streamDone, 25));
    expect(done.overall_code).toBe('OK');
    expect(done.statuses.map((s: Message) => s.code)).toEqual(['OK', 'OK', 'OK']);
    // The limit holds the 26 units now: the next request is refused.
    const next = await limited(rateLimitRequest('tollgate', request, 1));
    expect(next.overall_code).toBe('OVER_LIMIT');
    // Two requests (one admitted, one refused), 26 units: the stream's call added cost alone.
    const usage = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 2 && u.cost === 26,
    );
    expect([usage.value.successful, usage.value.failed, usage.value.endpoints]).toEqual([1, 1, ['/v1/chat']]);
  });
});
