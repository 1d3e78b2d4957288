/**
 * Envoy's own service definitions, from the .proto files vendored in protos/ (protos/README.md says
 * where each comes from): `envoy.service.auth.v3.Authorization` and
 * `envoy.service.ratelimit.v3.RateLimitService`. Loaded only when EXTAUTH_GRPC_PORT is set.
 */
import { join } from 'node:path';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PACKAGE_ROOT } from '../package-root.js';

/** The folders the vendored files import each other from, as their upstream repositories lay them out. */
export const PROTO_ROOTS = ['envoy-api', 'googleapis', 'protoc-gen-validate', 'xds'].map((root) =>
  join(PACKAGE_ROOT, 'protos', root),
);

export const AUTHORIZATION_PROTO = 'envoy/service/auth/v3/external_auth.proto';
export const RATE_LIMIT_PROTO = 'envoy/service/ratelimit/v3/rls.proto';

/**
 * Field names as in the .proto files, 64-bit numbers as numbers, enums as their names, unset fields
 * left out: the shapes src/extauth/envoy-check.ts and envoy-rate-limit.ts read and write.
 */
export const LOADER_OPTIONS = {
  includeDirs: PROTO_ROOTS,
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  oneofs: true,
} as const;

export interface EnvoyServices {
  readonly authorization: ServiceDefinition;
  readonly rateLimit: ServiceDefinition;
}

export function loadEnvoyServices(): EnvoyServices {
  const definitions = loadSync([AUTHORIZATION_PROTO, RATE_LIMIT_PROTO], LOADER_OPTIONS);
  return {
    authorization: definitions['envoy.service.auth.v3.Authorization'] as ServiceDefinition,
    rateLimit: definitions['envoy.service.ratelimit.v3.RateLimitService'] as ServiceDefinition,
  };
}
