/**
 * EXTAUTH_GRPC_PORT: Envoy's ext_authz (Check) and rate limit service (ShouldRateLimit) on one gRPC
 * listener, served on node:http2 by grpc-unary.ts with the codecs of check-codec.ts and
 * rate-limit-codec.ts (docs/decisions/0217-grpc-check-on-node-http2.md). Imported only when the port
 * is set.
 */
import {
  createServer,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { settledWithin } from '../ops/deadline.js';
import { decodeCheckRequest, encodeCheckResponse } from './check-codec.js';
import { check } from './envoy-check.js';
import { RateLimitCallError, shouldRateLimit } from './envoy-rate-limit.js';
import { CallerGoneError, type ExtauthDeps } from './gateway-decision.js';
import {
  GrpcCode,
  ignoreStreamError,
  refuse,
  serveUnary,
  type CallBounds,
  type GrpcStatus,
  type UnaryMethod,
} from './grpc-unary.js';
import { MessageBudget } from './message-budget.js';
import { decodeRateLimitRequest, encodeRateLimitResponse } from './rate-limit-codec.js';

export interface GrpcListener {
  readonly port: number;
  /** Stops taking calls, lets those in flight finish within `timeoutMs`, then cuts the rest. */
  close(timeoutMs: number): Promise<void>;
}

/** What the listener lets calls hold (docs/decisions/0247-grpc-calls-bounded.md). */
export interface GrpcBounds {
  /** Calls open at once on a connection (its SETTINGS_MAX_CONCURRENT_STREAMS). */
  readonly streamsPerConnection: number;
  /** Bytes held for unfinished messages on a connection, and on the whole listener. */
  readonly connectionBytes: number;
  readonly listenerBytes: number;
  /** How long a call's message may take to arrive whole. */
  readonly arrivalMs: number;
}

/**
 * Envoy multiplexes its calls, each a message of a few hundred bytes to a body it sends along, on a
 * few connections: far below these.
 */
export const GRPC_BOUNDS: GrpcBounds = {
  streamsPerConnection: 1_000,
  connectionBytes: 16 * 1024 * 1024,
  listenerBytes: 128 * 1024 * 1024,
  arrivalMs: 10_000,
};

type Serve = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, bounds: CallBounds) => void;

/** The methods by path (`/package.Service/Method`). */
function methodsOf(deps: ExtauthDeps, rlsDomain: string): ReadonlyMap<string, Serve> {
  // A throw is a gRPC error, never a crash.
  const statusOf = (err: unknown): GrpcStatus => {
    if (err instanceof RateLimitCallError) return { code: err.grpcCode, details: err.message };
    // Nobody is left to answer: no failure.
    if (err instanceof CallerGoneError) return { code: GrpcCode.CANCELLED, details: err.message };
    deps.logger.error({ err }, 'gRPC authorization call failed');
    return { code: GrpcCode.INTERNAL, details: 'internal error' };
  };
  const unary =
    <Req>(method: UnaryMethod<Req>): Serve =>
    (stream, headers, bounds) =>
      serveUnary(stream, headers, method, statusOf, bounds);
  return new Map([
    [
      '/envoy.service.auth.v3.Authorization/Check',
      unary({
        decode: decodeCheckRequest,
        answer: async (request, gone) => encodeCheckResponse(await check(deps, request, gone)),
      }),
    ],
    [
      '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      unary({
        decode: decodeRateLimitRequest,
        answer: async (request, gone) =>
          encodeRateLimitResponse(await shouldRateLimit(deps, rlsDomain, request, gone)),
      }),
    ],
  ]);
}

export async function startGrpcListener(
  deps: ExtauthDeps,
  options: { readonly host: string; readonly port: number; readonly rlsDomain: string },
  bounds: GrpcBounds = GRPC_BOUNDS,
): Promise<GrpcListener> {
  const methods = methodsOf(deps, options.rlsDomain);
  // As grpc-js serves: no cap of Node's on a connection's memory, whose enforcement it handles badly;
  // the calls' own bounds hold it instead.
  const server = createServer({
    maxSessionMemory: Number.MAX_SAFE_INTEGER,
    settings: { maxConcurrentStreams: bounds.streamsPerConnection },
  });
  const listenerBudget = new MessageBudget(bounds.listenerBytes);
  const sessions = new Map<Http2Session, CallBounds>();
  server.on('session', (session: Http2Session) => {
    const budget = new MessageBudget(bounds.connectionBytes, listenerBudget);
    sessions.set(session, { budget, arrivalMs: bounds.arrivalMs });
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', ignoreStreamError);
    const contentType = headers['content-type'];
    if (contentType === undefined || !contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    const path = headers[':path'] ?? '';
    const method = methods.get(path);
    if (method === undefined)
      refuse(stream, GrpcCode.UNIMPLEMENTED, `The server does not implement the method ${path}`);
    else method(stream, headers, sessions.get(stream.session!)!);
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : options.port);
    });
  });
  return {
    port,
    async close(timeoutMs) {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      // GOAWAY: the client opens no more calls on the connection, those in flight finish.
      for (const session of sessions.keys()) session.close();
      if (!(await settledWithin(drained, timeoutMs)))
        for (const session of sessions.keys()) session.destroy();
    },
  };
}
