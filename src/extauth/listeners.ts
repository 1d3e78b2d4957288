/**
 * The gateways' listeners (docs/guides/external-authorization.md): forward auth on EXTAUTH_PORT and
 * Envoy's gRPC services on EXTAUTH_GRPC_PORT, each off unless its port is set. Started and drained
 * with the public listener by the composition root (src/app.ts).
 */
import { createServer } from 'node:http';
import type { Config } from '../config.js';
import { drainHttpServer } from '../ops/drain-http.js';
import { listenOn } from '../net/listen-on.js';
import { createForwardAuthHandler } from './forward-auth.js';
import type { ExtauthDeps } from './gateway-decision.js';

export interface ExtauthPorts {
  readonly extauthPort?: number;
  readonly extauthGrpcPort?: number;
}

export interface ExtauthListeners {
  readonly ports: ExtauthPorts;
  /** SIGTERM: stop taking calls, let those in flight finish within `timeoutMs`, then cut the rest. */
  close(timeoutMs: number): Promise<void>;
}

export async function startExtauth(
  deps: ExtauthDeps,
  config: Pick<Config, 'host' | 'extauth'>,
): Promise<ExtauthListeners> {
  const { port, grpcPort, trustedHops, rlsDomain } = config.extauth;
  const closers: ((timeoutMs: number) => Promise<unknown>)[] = [];
  let ports: ExtauthPorts = {};
  if (port !== undefined) {
    // The public listener's limits on slow and large request heads (src/server.ts).
    const server = createServer(
      { headersTimeout: 15_000, requestTimeout: 300_000, maxHeaderSize: 16_384, keepAliveTimeout: 65_000 },
      createForwardAuthHandler({ ...deps, trustedHops }),
    );
    ports = { extauthPort: await listenOn(server, port, config.host) };
    // Gateways keep connections open: every answer from now on closes its own.
    closers.push((timeoutMs) => drainHttpServer(server, timeoutMs));
  }
  if (grpcPort !== undefined) {
    // gRPC and Envoy's definitions are loaded only by a deployment that serves them.
    const { startGrpcListener } = await import('./grpc-server.js');
    const grpc = await startGrpcListener(deps, { host: config.host, port: grpcPort, rlsDomain });
    ports = { ...ports, extauthGrpcPort: grpc.port };
    closers.push((timeoutMs) => grpc.close(timeoutMs));
  }
  return {
    ports,
    async close(timeoutMs) {
      await Promise.all(closers.map((close) => close(timeoutMs)));
    },
  };
}
