/**
 * What a client of the gRPC listener (src/extauth/grpc-server.ts) can make it hold: a call whose
 * message does not arrive whole in time is ended DEADLINE_EXCEEDED, a connection advertises a bound
 * on its calls, and a call past what a connection or the listener may hold for unfinished messages is
 * refused RESOURCE_EXHAUSTED, while the calls Envoy makes, many at once on one connection, pass
 * (docs/decisions/0247-grpc-calls-bounded.md). Answered without a decision: calls of another domain.
 */
import { connect, type ClientHttp2Session } from 'node:http2';
import { afterEach, expect, it } from '@jest/globals';
import type { ExtauthDeps } from '../../src/extauth/gateway-decision.js';
import {
  GRPC_BOUNDS,
  startGrpcListener,
  type GrpcBounds,
  type GrpcListener,
} from '../../src/extauth/grpc-server.js';
import { STREAM_BYTES } from '../../src/extauth/grpc-unary.js';
import { createLogger } from '../../src/ops/logger.js';

const RLS = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const ARRIVAL_MS = 500;

let listener: GrpcListener | undefined;
const sessions: ClientHttp2Session[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) session.destroy();
  await listener?.close(0);
});

async function start(bounds: Partial<GrpcBounds>): Promise<() => ClientHttp2Session> {
  // Calls of another domain are answered without a decision: nothing of the deps is read.
  const deps = { logger: createLogger('silent') } as unknown as ExtauthDeps;
  listener = await startGrpcListener(
    deps,
    { host: '127.0.0.1', port: 0, rlsDomain: 'tollgate' },
    { ...GRPC_BOUNDS, arrivalMs: ARRIVAL_MS, ...bounds },
  );
  const port = listener.port;
  return () => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    sessions.push(session);
    return session;
  };
}

/** A gRPC frame declaring `declared` bytes of message, of which `message` is sent. */
function frame(message: Buffer, declared = message.length): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(declared, 1);
  return Buffer.concat([prefix, message]);
}

/** A RateLimitRequest of domain `other`: OK, uncounted. */
const otherDomain = frame(Buffer.from([10, 5, ...Buffer.from('other')]));

interface Ended {
  readonly grpcStatus: number | undefined;
  readonly afterMs: number;
}

/** A call sending `body`, and ending its side only when `end`; resolves how and when it ended. */
function call(session: ClientHttp2Session, body: Buffer, end: boolean): Promise<Ended> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': RLS,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let grpcStatus: number | undefined;
    stream.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) grpcStatus = Number(headers['grpc-status']);
    });
    stream.on('trailers', (trailers) => (grpcStatus = Number(trailers['grpc-status'])));
    stream.on('error', () => {});
    stream.on('close', () => resolve({ grpcStatus, afterMs: performance.now() - startedAt }));
    stream.resume();
    if (end) stream.end(body);
    else stream.write(body);
  });
}

/** A call whose message never arrives whole: its first bytes, then nothing. */
const stalled = (session: ClientHttp2Session, bytes = 3) =>
  call(session, frame(Buffer.alloc(bytes), bytes + 100), false);

it('ends a call whose message does not arrive whole within the deadline, and refuses calls past what a connection or the listener may hold', async () => {
  // Room for ten empty calls per connection, fifteen on the listener.
  const slack = 1_000;
  const open = await start({
    connectionBytes: 10 * STREAM_BYTES + slack,
    listenerBytes: 15 * STREAM_BYTES + slack,
  });
  // A message larger than a connection may hold is refused before it is whole, and holds nothing after.
  const large = await stalled(open(), 20 * STREAM_BYTES);
  expect(large.grpcStatus).toBe(8);
  expect(large.afterMs).toBeLessThan(ARRIVAL_MS);
  const a = open();
  const onA = Array.from({ length: 11 }, () => stalled(a));
  // The eleventh call is past the connection's bound: refused at once.
  const eleventh = await onA[10]!;
  expect(eleventh.grpcStatus).toBe(8);
  expect(eleventh.afterMs).toBeLessThan(ARRIVAL_MS);
  // Another connection has the listener's room left: five calls, not six.
  const b = open();
  const onB = Array.from({ length: 6 }, () => stalled(b));
  expect((await onB[5]!).grpcStatus).toBe(8);

  // The ten and the five end at their deadline, not before, soon after.
  for (const ended of await Promise.all([...onA.slice(0, 10), ...onB.slice(0, 5)])) {
    expect(ended.grpcStatus).toBe(4);
    expect(ended.afterMs).toBeGreaterThanOrEqual(ARRIVAL_MS - 5);
    expect(ended.afterMs).toBeLessThan(ARRIVAL_MS + 2_000);
  }
  // What they held is given back: the connections take calls again.
  expect((await call(a, otherDomain, true)).grpcStatus).toBe(0);
  expect((await call(b, otherDomain, true)).grpcStatus).toBe(0);
}, 10_000);

it('advertises a bound on calls per connection and serves many concurrent calls beside stalled ones', async () => {
  // A thousand calls at once take seconds to be read on a machine busy with other tests, the messages
  // on `a` behind the stalled 3 MiB: the deadline is for the stalled calls alone.
  const open = await start({ arrivalMs: 5_000 });
  const a = open();
  const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) =>
    a.once('remoteSettings', resolve),
  );
  expect(settings.maxConcurrentStreams).toBe(GRPC_BOUNDS.streamsPerConnection);
  // A client holding calls open, with a message of 3 MiB almost whole among them.
  const held = [...Array.from({ length: 100 }, () => stalled(a)), stalled(a, 3 * 1024 * 1024)];
  const b = open();
  const calls = await Promise.all(
    Array.from({ length: 1_000 }, (_, i) => call(i % 2 === 0 ? a : b, otherDomain, true)),
  );
  expect(calls.filter((ended) => ended.grpcStatus === 0)).toHaveLength(1_000);
  const ended = await Promise.all(held);
  expect(new Set(ended.map((e) => e.grpcStatus))).toEqual(new Set([4]));
}, 20_000);
