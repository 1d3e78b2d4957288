/**
 * The gRPC listener (EXTAUTH_GRPC_PORT) as gRPC over HTTP/2 has a server behave, beyond the answers
 * extauth-grpc.test.ts checks: a compressed call, an unknown method, a cancelled call, a deadline, a
 * content type that is not gRPC's, a body of no or two messages, one too large or undecodable. With
 * grpc-js's client where it can send the case, with node:http2 where it cannot.
 */
import { connect, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { credentials, makeGenericClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { EnvoyClient } from '../helpers/envoy-client.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const CHECK = '/envoy.service.auth.v3.Authorization/Check';
const h = new ProxyHarness();
let stop: () => Promise<void>;
let address: string;
let session: ClientHttp2Session;

beforeAll(async () => {
  stop = await HARNESS_MODES[0]!.start(h, { env: { EXTAUTH_GRPC_PORT: '0' } });
  address = `127.0.0.1:${h.extauthGrpcPort}`;
  session = connect(`http://${address}`);
}, 60_000);
afterAll(async () => {
  session?.close();
  await stop?.();
});

/** A gRPC frame of `message`, flagged compressed or not, declaring `length`. */
function frame(message: Buffer, compressed = false, length = message.length): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed ? 1 : 0;
  prefix.writeUInt32BE(length, 1);
  return Buffer.concat([prefix, message]);
}

interface Answer {
  readonly headers: IncomingHttpHeaders;
  readonly trailers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** A POST to `path` with `headers`, the body sent unless `undefined` (the stream is then left open). */
function post(path: string, headers: Record<string, string>, body: Buffer | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': path, te: 'trailers', ...headers });
    let answered: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (answered = h));
    stream.on('trailers', (t) => (trailers = t));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve({ headers: answered, trailers, body: Buffer.concat(chunks) }));
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}

const grpc = { 'content-type': 'application/grpc' };
/** A refusal's status: trailers-only, in the headers. */
const statusOf = (answer: Answer) => [Number(answer.headers['grpc-status']), answer.headers['grpc-message']];

it('answers a gzip-compressed Check as any other', async () => {
  const key = await h.createKey({ limit: 5, period: 'minute' });
  const envoy = new EnvoyClient(address, { 'grpc.default_compression_algorithm': 2 });
  try {
    const admitted = await envoy.check('/a', { 'x-api-key': key.secret });
    expect(admitted.status.code ?? 0).toBe(0);
    expect(admitted.ok_response.headers.map((o: { header: { key: string } }) => o.header.key)).toContain(
      'x-consumer-api-key-id',
    );
  } finally {
    envoy.close();
  }
});

it('answers a method it does not serve UNIMPLEMENTED, and a client that gave up is no failure: the next call is answered', async () => {
  const Generic = makeGenericClientConstructor(
    {
      Nope: {
        path: '/envoy.service.auth.v3.Authorization/Nope',
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    },
    'Nope',
  );
  const client = new Generic(address, credentials.createInsecure());
  const call = (method: string, deadline?: number) =>
    new Promise<number>((resolve) =>
      client.makeUnaryRequest(
        method,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        deadline === undefined ? {} : { deadline },
        (err: ServiceError | null) => resolve(err?.code ?? 0),
      ),
    );
  try {
    expect(await call('/envoy.service.auth.v3.Authorization/Nope')).toBe(12);
    // A deadline already past: the client cancels the call before Tollgate's answer.
    expect(await call(CHECK, Date.now() - 1)).toBe(4);
    expect(await call(CHECK)).toBe(0);
  } finally {
    client.close();
  }
});

it('ends a call whose grpc-timeout passes DEADLINE_EXCEEDED; a grpc-timeout it cannot read is INTERNAL', async () => {
  expect(statusOf(await post(CHECK, { ...grpc, 'grpc-timeout': '50m' }, undefined))).toEqual([
    4,
    'Deadline%20exceeded',
  ]);
  expect(statusOf(await post(CHECK, { ...grpc, 'grpc-timeout': 'soon' }, frame(Buffer.alloc(0))))[0]).toBe(
    13,
  );
});

it('refuses what is not one gRPC message: 415 for another content type, UNIMPLEMENTED for none or two, RESOURCE_EXHAUSTED past 4 MiB, INTERNAL for bytes no message has', async () => {
  const json = await post(CHECK, { 'content-type': 'application/json' }, Buffer.from('{}'));
  expect(json.headers[':status']).toBe(415);
  expect(statusOf(await post(CHECK, grpc, Buffer.alloc(0)))[0]).toBe(12);
  expect(statusOf(await post(CHECK, grpc, frame(Buffer.alloc(3), false, 9)))[0]).toBe(12);
  const two = Buffer.concat([frame(Buffer.alloc(0)), frame(Buffer.alloc(0))]);
  expect(statusOf(await post(CHECK, grpc, two))[0]).toBe(12);
  expect(statusOf(await post(CHECK, grpc, frame(Buffer.alloc(4 * 1024 * 1024 + 1))))[0]).toBe(8);
  // Field 1 (attributes) declares 100 bytes and holds none.
  expect(statusOf(await post(CHECK, grpc, frame(Buffer.from([10, 100]))))[0]).toBe(13);
  const brotli = await post(CHECK, { ...grpc, 'grpc-encoding': 'br' }, frame(Buffer.alloc(2), true));
  expect(statusOf(brotli)[0]).toBe(12);
  const notGzip = await post(CHECK, { ...grpc, 'grpc-encoding': 'gzip' }, frame(Buffer.alloc(2), true));
  expect(statusOf(notGzip)[0]).toBe(13);
});

it('answers an empty CheckRequest (a request with nothing in it) with one framed message and grpc-status 0 in trailers', async () => {
  const answer = await post(CHECK, grpc, frame(Buffer.alloc(0)));
  expect([answer.headers[':status'], answer.headers['content-type'], answer.trailers['grpc-status']]).toEqual(
    [200, 'application/grpc', '0'],
  );
  expect(answer.body.readUInt32BE(1)).toBe(answer.body.length - 5);
});
