/**
 * The gRPC listener's codecs (src/extauth/check-codec.ts, rate-limit-codec.ts) against Envoy's own
 * definitions as proto-loader reads them (tests/helpers/envoy-protos.ts): a request decodes to the
 * values `toObject` gives for the fields the decision reads, for the messages Envoy's filters send
 * (tests/helpers/envoy-messages.ts) and for random ones, and damaged bytes come to no worse than an
 * Error; a response encodes to the very bytes protobufjs writes from the same object.
 */
import { describe, expect, it } from '@jest/globals';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import fc from 'fast-check';
import { decodeCheckRequest, encodeCheckResponse } from '../../src/extauth/check-codec.js';
import type { CheckResponse } from '../../src/extauth/envoy-check.js';
import type { RateLimitResponse } from '../../src/extauth/envoy-rate-limit.js';
import { decodeRateLimitRequest, encodeRateLimitResponse } from '../../src/extauth/rate-limit-codec.js';
import { checkRequest, rateLimitRequest, type Message } from '../helpers/envoy-messages.js';
import { AUTHORIZATION_PROTO, LOADER_OPTIONS, RATE_LIMIT_PROTO } from '../helpers/envoy-protos.js';

const definitions = loadSync([AUTHORIZATION_PROTO, RATE_LIMIT_PROTO], LOADER_OPTIONS);
const Check = (definitions['envoy.service.auth.v3.Authorization'] as ServiceDefinition).Check!;
const ShouldRateLimit = (definitions['envoy.service.ratelimit.v3.RateLimitService'] as ServiceDefinition)
  .ShouldRateLimit!;

/**
 * Which fields of a decoded message are read: `true` a value, `''` a string (proto3's "" when it is
 * not on the wire), an object its fields, `[shape]` each element's.
 */
type Shape = true | '' | { readonly [field: string]: Shape } | readonly [Shape];

const CHECK_READ: Shape = {
  attributes: {
    source: { address: { socket_address: { address: '' } } },
    request: { http: { method: '', headers: true, path: '', host: '', body: '', raw_body: true } },
  },
};
const RATE_LIMIT_READ: Shape = {
  domain: '',
  descriptors: [{ entries: [{ key: '', value: '' }] }],
  hits_addend: true,
};

/** `message`'s fields in `shape`, those it has, and each string it lacks as "". */
function read(message: Message, shape: Shape): Message {
  if (shape === true || shape === '') return message;
  if (Array.isArray(shape)) return (message as Message[]).map((element) => read(element, shape[0]));
  const out: Message = {};
  for (const [field, inner] of Object.entries(shape))
    if (message[field] !== undefined) out[field] = read(message[field], inner as Shape);
    else if (inner === '') out[field] = '';
  return out;
}

const text = fc.string({ unit: 'binary', maxLength: 12 });
const optional = <T>(record: { [K in keyof T]: fc.Arbitrary<T[K]> }) =>
  fc.record(record, { requiredKeys: [] });
const peer = optional({
  address: optional({
    socket_address: optional({ address: text, port_value: fc.integer({ min: 0, max: 65_535 }) }),
  }),
  principal: text,
});
const randomCheck = optional({
  attributes: optional({
    source: peer,
    destination: peer,
    request: optional({
      time: optional({ seconds: fc.nat() }),
      http: optional({
        id: text,
        method: text,
        headers: fc.dictionary(text, text, { maxKeys: 5 }),
        path: text,
        host: text,
        scheme: text,
        size: fc.nat(),
        protocol: text,
        body: text,
        raw_body: fc.uint8Array({ maxLength: 8 }).map((bytes) => Buffer.from(bytes)),
      }),
    }),
    context_extensions: fc.dictionary(text, text, { maxKeys: 3 }),
  }),
});
const entry = optional({ key: text, value: text });
const randomRateLimit = optional({
  domain: text,
  descriptors: fc.array(
    optional({
      entries: fc.array(entry, { maxLength: 4 }),
      limit: optional({ requests_per_unit: fc.nat(), unit: fc.constantFrom('SECOND', 'HOUR') }),
    }),
    { maxLength: 4 },
  ),
  hits_addend: fc.nat(),
});

describe('requests decode to what proto-loader reads', () => {
  it("Envoy's messages", () => {
    const check = Check.requestSerialize(checkRequest('/bench/item?id=42', { 'x-api-key': 'tg_secret' }));
    expect(decodeCheckRequest(check)).toStrictEqual(read(Check.requestDeserialize(check), CHECK_READ));
    expect(decodeCheckRequest(check).attributes?.request?.http?.headers?.['x-api-key']).toBe('tg_secret');
    const limit = ShouldRateLimit.requestSerialize(
      rateLimitRequest(
        'tollgate',
        [
          [
            ['api_key', 'tg_secret'],
            ['path', '/a'],
          ],
          [['generic_key', 'tollgate-settle']],
        ],
        3,
      ),
    );
    expect(decodeRateLimitRequest(limit)).toStrictEqual(
      read(ShouldRateLimit.requestDeserialize(limit), RATE_LIMIT_READ),
    );
  });

  it('a string Envoy\'s encoder leaves off the wire (proto3\'s empty string) decodes as ""', () => {
    const field = (number: number, bytes: Buffer) =>
      Buffer.concat([Buffer.from([(number << 3) | 2, bytes.length]), bytes]);
    // A descriptor of one entry of key `api_key` and no value field; no domain.
    const entry = field(1, Buffer.from('api_key'));
    const limit = field(2, field(1, entry));
    expect(decodeRateLimitRequest(limit)).toStrictEqual({
      domain: '',
      descriptors: [{ entries: [{ key: 'api_key', value: '' }] }],
    });
    // An HttpRequest with a header `x-api-key` of no value, and neither method, path nor host.
    const header = field(3, field(1, Buffer.from('x-api-key')));
    const check = field(1, field(4, field(2, header)));
    expect(decodeCheckRequest(check).attributes?.request?.http).toStrictEqual({
      method: '',
      path: '',
      host: '',
      body: '',
      headers: { 'x-api-key': '' },
    });
  });

  it('a header named `__proto__` as any other header (found by the random messages)', () => {
    const headers = JSON.parse('{"__proto__": "", "x-api-key": "tg_secret"}') as Record<string, string>;
    const check = Check.requestSerialize(checkRequest('/', headers));
    const decoded = decodeCheckRequest(check);
    expect(decoded).toStrictEqual(read(Check.requestDeserialize(check), CHECK_READ));
    const seen = decoded.attributes!.request!.http!.headers!;
    expect(Object.getOwnPropertyDescriptor(seen, '__proto__')?.value).toBe('');
    expect(seen['x-api-key']).toBe('tg_secret');
    expect(Object.getPrototypeOf(seen)).toBe(Object.prototype);
  });

  it('random messages', () => {
    fc.assert(
      fc.property(randomCheck, (message) => {
        const bytes = Check.requestSerialize(message);
        expect(decodeCheckRequest(bytes)).toStrictEqual(read(Check.requestDeserialize(bytes), CHECK_READ));
      }),
    );
    fc.assert(
      fc.property(randomRateLimit, (message) => {
        const bytes = ShouldRateLimit.requestSerialize(message);
        expect(decodeRateLimitRequest(bytes)).toStrictEqual(
          read(ShouldRateLimit.requestDeserialize(bytes), RATE_LIMIT_READ),
        );
      }),
    );
  });

  // A field of the wrong wire type is read by protobufjs as its declared type and skipped here when
  // the decision does not read it: values may differ on such bytes, never the outcome's kind.
  it('damaged messages (a byte changed, the end cut) decode or throw an Error, as protobufjs does', () => {
    const damaged = <T>(message: fc.Arbitrary<T>, serialize: (m: T) => Buffer) =>
      fc.tuple(message, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat()).map(([m, at, byte, cut]) => {
        const bytes = Buffer.from(serialize(m).subarray(0, Math.max(0, serialize(m).length - (cut % 3))));
        if (bytes.length > 0) bytes[at % bytes.length] = byte;
        return bytes;
      });
    const outcome = (decode: () => unknown) => {
      try {
        decode();
        return 'decoded';
      } catch (err) {
        return err instanceof Error ? 'error' : 'something else thrown';
      }
    };
    fc.assert(
      fc.property(damaged(randomCheck, Check.requestSerialize), (bytes) => {
        expect(['decoded', 'error']).toContain(outcome(() => decodeCheckRequest(bytes)));
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(damaged(randomRateLimit, ShouldRateLimit.requestSerialize), (bytes) => {
        expect(['decoded', 'error']).toContain(outcome(() => decodeRateLimitRequest(bytes)));
      }),
      { numRuns: 500 },
    );
  });
});

const option = fc
  .record({ key: text, value: text })
  .map((header) => ({ header, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' as const }));
const options = fc.array(option, { maxLength: 4 });
const randomCheckResponse: fc.Arbitrary<CheckResponse> = fc.oneof(
  fc.record({
    status: fc.record({ code: fc.constant(0) }),
    ok_response: fc.record({
      headers: options,
      headers_to_remove: fc.array(text, { maxLength: 3 }),
      response_headers_to_add: options,
    }),
  }),
  fc.record({
    status: fc.record({ code: fc.integer({ min: 1, max: 16 }), message: text }, { requiredKeys: ['code'] }),
    denied_response: fc.record({
      status: fc.record({ code: fc.integer({ min: 100, max: 599 }) }),
      headers: options,
      body: text,
    }),
  }),
);
const code = fc.constantFrom('OK' as const, 'OVER_LIMIT' as const);
const randomRateLimitResponse: fc.Arbitrary<RateLimitResponse> = fc.record(
  {
    overall_code: code,
    statuses: fc.array(
      fc.record(
        {
          code,
          current_limit: fc.record({
            name: text,
            // Past 32 bits too: both sides keep the low 32 of the uint32 field.
            requests_per_unit: fc.integer({ min: 0, max: 2 ** 40 }),
            unit: fc.constantFrom('UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'),
          }),
          limit_remaining: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
          duration_until_reset: fc.record({
            seconds: fc.integer({ min: 0, max: 2 ** 40 }),
            nanos: fc.integer({ min: 0, max: 999_999_999 }),
          }),
        },
        { requiredKeys: ['code'] },
      ),
      { maxLength: 4 },
    ),
    response_headers_to_add: fc.array(fc.record({ key: text, value: text }), { maxLength: 4 }),
    raw_body: fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)),
  },
  { requiredKeys: ['overall_code', 'statuses', 'response_headers_to_add'] },
);

describe('responses encode to the bytes protobufjs writes', () => {
  it('CheckResponse', () => {
    fc.assert(
      fc.property(randomCheckResponse, (response) => {
        expect(Buffer.from(encodeCheckResponse(response))).toEqual(Check.responseSerialize(response));
      }),
    );
  });

  it('RateLimitResponse', () => {
    fc.assert(
      fc.property(randomRateLimitResponse, (response) => {
        expect(Buffer.from(encodeRateLimitResponse(response))).toEqual(
          ShouldRateLimit.responseSerialize(response),
        );
      }),
    );
  });
});
