/**
 * EXTAUTH_GRPC_PORT: Envoy's ext_authz (Check) and rate limit service (ShouldRateLimit) on one gRPC
 * server, from Envoy's own service definitions (envoy-protos.ts). Imported only when the port is set.
 */
import {
  Server,
  ServerCredentials,
  status,
  type sendUnaryData,
  type ServerUnaryCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { settledWithin } from '../ops/deadline.js';
import { check, type CheckRequest } from './envoy-check.js';
import { loadEnvoyServices } from './envoy-protos.js';
import { RateLimitCallError, shouldRateLimit, type RateLimitRequest } from './envoy-rate-limit.js';
import type { ExtauthDeps } from './gateway-decision.js';

export interface GrpcListener {
  readonly port: number;
  /** Stops taking calls, lets those in flight finish within `timeoutMs`, then cuts the rest. */
  close(timeoutMs: number): Promise<void>;
}

/** A unary method whose answer is `answer`'s; a throw is a gRPC error, never a crash. */
function unary<Req, Res>(
  deps: ExtauthDeps,
  answer: (request: Req) => Promise<Res>,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  return (call, callback) => {
    answer(call.request).then(
      (response) => callback(null, response),
      (err: unknown) => {
        if (err instanceof RateLimitCallError) callback({ code: err.grpcCode, details: err.message });
        else {
          deps.logger.error({ err }, 'gRPC authorization call failed');
          callback({ code: status.INTERNAL, details: 'internal error' });
        }
      },
    );
  };
}

export async function startGrpcListener(
  deps: ExtauthDeps,
  options: { readonly host: string; readonly port: number; readonly rlsDomain: string },
): Promise<GrpcListener> {
  const services = loadEnvoyServices();
  const server = new Server();
  server.addService(services.authorization, {
    Check: unary(deps, (request: CheckRequest) => check(deps, request)),
  } as UntypedServiceImplementation);
  server.addService(services.rateLimit, {
    ShouldRateLimit: unary(deps, (request: RateLimitRequest) =>
      shouldRateLimit(deps, options.rlsDomain, request),
    ),
  } as UntypedServiceImplementation);
  // An IPv6 host is bracketed in the target grpc-js binds.
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${options.port}`, ServerCredentials.createInsecure(), (err, bound) =>
      err === null ? resolve(bound) : reject(err),
    ),
  );
  return {
    port,
    async close(timeoutMs) {
      const drained = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      if (!(await settledWithin(drained, timeoutMs))) server.forceShutdown();
    },
  };
}
