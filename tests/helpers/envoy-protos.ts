/**
 * Envoy's own service definitions, from the .proto files vendored in protos/ (protos/README.md says
 * where each comes from), as a client loads them with proto-loader: the tests' client
 * (envoy-client.ts), the codecs' test (tests/unit/envoy-codecs.test.ts) and the bench's load
 * generator (bench/commands/extauth.ts). Tollgate itself reads and writes the few fields it uses
 * without them (src/extauth/check-codec.ts, rate-limit-codec.ts).
 */
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/** The folders the vendored files import each other from, as their upstream repositories lay them out. */
export const PROTO_ROOTS = ['envoy-api', 'googleapis', 'protoc-gen-validate', 'xds'].map((root) =>
  join(ROOT, 'protos', root),
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
