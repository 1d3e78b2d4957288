/**
 * Envoy's ext_authz with `with_request_body`: the body it sends along in the CheckRequest (`raw_body`
 * with `pack_as_bytes`, else `body`) decides a plan's `match.body` limits and its `reserve` as the
 * proxy's own request body would (docs/decisions/0241), read in the forms backends read; a body Envoy
 * sent only the start of (`x-envoy-auth-partial-body: true`) is refused 413 when a plan reads it, one
 * whose content type names UTF-7 415 (docs/decisions/0245), and a call without a body is decided
 * without one. Both modes.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EnvoyClient } from '../helpers/envoy-client.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { perModelKey, perModelRemaining } from '../helpers/per-model-key.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const LIMIT = 1_000;
const chat = (model: string, extra: Record<string, unknown> = {}) =>
  Buffer.from(JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }));

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  let envoy: EnvoyClient;

  beforeAll(async () => {
    // Counts in Redis expire by the wall clock: the limiter's windows must be the real ones.
    h.realTime = true;
    stop = await mode.start(h, { env: { EXTAUTH_GRPC_PORT: '0', BODY_MATCH_MAX_BYTES: '4096' } });
    envoy = new EnvoyClient(`127.0.0.1:${h.extauthGrpcPort}`);
  }, 60_000);
  afterAll(async () => {
    envoy?.close();
    await stop?.();
  });

  /** Each call reserving max_tokens + 100 (default 500), settled by the openai preset. */
  const modelKey = () =>
    perModelKey(h, LIMIT, [
      {
        match: { pathPrefix: '/v1' },
        reserve: { pointer: '/max_tokens', add: 100, default: 500 },
        settle: { preset: 'openai' },
      },
    ]);
  const remaining = (id: string) => perModelRemaining(h, id);

  const post = (secret: string, http: Record<string, unknown>, headers: Record<string, string> = {}) =>
    envoy.check(
      '/v1/chat/completions',
      { 'x-api-key': secret, ':method': 'POST', ...headers },
      {
        method: 'POST',
        ...http,
      },
    );

  it('decides a per-model limit and a reservation on the body Envoy sends, as bytes or as text, in any form a backend reads', async () => {
    const key = await modelKey();
    const admitted = async (http: Record<string, unknown>, headers?: Record<string, string>) => {
      const response = await post(key.secret, http, headers);
      expect(response.status.code ?? 0).toBe(0);
    };
    await admitted({ raw_body: chat('gpt-4o', { max_tokens: 100 }) });
    expect(await remaining(key.id)).toBe(LIMIT - 200);
    await admitted({ body: chat('gpt-4o').toString() });
    expect(await remaining(key.id)).toBe(LIMIT - 700);
    await admitted(
      { raw_body: gzipSync(chat('gpt-4o', { max_tokens: 50 })) },
      { 'content-encoding': 'gzip' },
    );
    expect(await remaining(key.id)).toBe(LIMIT - 850);
    // Another model is not the limit's; a call without a body is decided without one.
    await admitted({ raw_body: chat('gpt-4o-mini', { max_tokens: 900 }) });
    await admitted({});
    expect(await remaining(key.id)).toBe(LIMIT - 850);
    // 150 left cannot hold 200 more.
    const over = await post(key.secret, { raw_body: chat('gpt-4o', { max_tokens: 100 }) });
    expect([over.status.code, over.denied_response.status.code]).toEqual([8, 'TooManyRequests']);
    expect(JSON.parse(over.denied_response.body)).toMatchObject({
      code: 'rate_limit_exceeded',
      name: 'gpt-4o',
    });
  });

  it('refuses a body whose content type names UTF-7 with 415 unsupported_charset, as the proxy does, charging nothing', async () => {
    const key = await modelKey();
    // `+AC0-` is `-` to a backend that decodes the UTF-7 its content type names (Express).
    for (const charset of ['utf-7', 'UTF-7-IMAP']) {
      const refused = await post(
        key.secret,
        { raw_body: Buffer.from('{"model":"gpt+AC0-4o","max_tokens":100}') },
        { 'content-type': `application/json; charset=${charset}` },
      );
      expect([refused.status.code, refused.denied_response.status.code]).toEqual([7, 'UnsupportedMediaType']);
      expect(JSON.parse(refused.denied_response.body)).toMatchObject({ code: 'unsupported_charset' });
    }
    expect(await remaining(key.id)).toBe(LIMIT);
    // UTF-8 named, the same body is decided on as it reads.
    const plain = await post(
      key.secret,
      { raw_body: chat('gpt-4o', { max_tokens: 100 }) },
      { 'content-type': 'application/json; charset=utf-8' },
    );
    expect(plain.status.code ?? 0).toBe(0);
    expect(await remaining(key.id)).toBe(LIMIT - 200);
  });

  it('refuses a body Envoy sent only the start of, or past the bound, with 413 body_too_large', async () => {
    const key = await modelKey();
    const partial = await post(
      key.secret,
      { raw_body: chat('gpt-4o') },
      { 'x-envoy-auth-partial-body': 'true' },
    );
    expect(partial.denied_response.status.code).toBe('PayloadTooLarge');
    expect(JSON.parse(partial.denied_response.body)).toMatchObject({ code: 'body_too_large' });
    const large = await post(key.secret, { raw_body: chat('gpt-4o', { pad: ' '.repeat(5_000) }) });
    expect(JSON.parse(large.denied_response.body)).toMatchObject({ code: 'body_too_large' });
    // A whole body, said to be whole, is decided on.
    const whole = await post(
      key.secret,
      { raw_body: chat('gpt-4o') },
      { 'x-envoy-auth-partial-body': 'false' },
    );
    expect(whole.status.code ?? 0).toBe(0);
    expect(await remaining(key.id)).toBe(LIMIT - 500);
  });
});
