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
import type { ExtauthDeps } from './gateway-decision.js';
import {
  GrpcCode,
  ignoreStreamError,
  refuse,
  serveUnary,
  type GrpcStatus,
  type UnaryMethod,
} from './grpc-unary.js';
import { decodeRateLimitRequest, encodeRateLimitResponse } from './rate-limit-codec.js';

export interface GrpcListener {
  readonly port: number;
  /** Stops taking calls, lets those in flight finish within `timeoutMs`, then cuts the rest. */
  close(timeoutMs: number): Promise<void>;
}

type Serve = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void;

/** The methods by path (`/package.Service/Method`). */
function methodsOf(deps: ExtauthDeps, rlsDomain: string): ReadonlyMap<string, Serve> {
  // A throw is a gRPC error, never a crash.
  const statusOf = (err: unknown): GrpcStatus => {
    if (err instanceof RateLimitCallError) return { code: err.grpcCode, details: err.message };
    deps.logger.error({ err }, 'gRPC authorization call failed');
    return { code: GrpcCode.INTERNAL, details: 'internal error' };
  };
  const unary =
    <Req>(method: UnaryMethod<Req>): Serve =>
    (stream, headers) =>
      serveUnary(stream, headers, method, statusOf);
  return new Map([
    [
      '/envoy.service.auth.v3.Authorization/Check',
      unary({
        decode: decodeCheckRequest,
        answer: async (request) => encodeCheckResponse(await check(deps, request)),
      }),
    ],
    [
      '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      unary({
        decode: decodeRateLimitRequest,
        answer: async (request) => encodeRateLimitResponse(await shouldRateLimit(deps, rlsDomain, request)),
      }),
    ],
  ]);
}

export async function startGrpcListener(
  deps: ExtauthDeps,
  options: { readonly host: string; readonly port: number; readonly rlsDomain: string },
): Promise<GrpcListener> {
  const methods = methodsOf(deps, options.rlsDomain);
  // As grpc-js serves: no cap on a connection's memory, whose enforcement Node handles badly.
  const server = createServer({ maxSessionMemory: Number.MAX_SAFE_INTEGER });
  const sessions = new Set<Http2Session>();
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
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
    else method(stream, headers);
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
      for (const session of sessions) session.close();
      if (!(await settledWithin(drained, timeoutMs))) for (const session of sessions) session.destroy();
    },
  };
}
