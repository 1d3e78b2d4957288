// Envoy's ext_authz calls (envoy.service.auth.v3.Authorization/Check, the message of
// tests/helpers/envoy-messages.ts) at Tollgate's gRPC listener, IN_FLIGHT calls at a time over one
// HTTP/2 connection, for SECONDS; prints `{"requests", "ok", "p50", "p99"}` (ms) as one JSON line.
// Env: ADDRESS (host:port), SECRET, TARGET (the request path), SECONDS, IN_FLIGHT. Run by Node alone
// for `npm run bench -- extauth` (`tsc` has built dist/src, whose protos module it loads).
import path from 'node:path';
import { credentials, loadPackageDefinition, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type * as EnvoyProtos from '../../src/extauth/envoy-protos.ts';
import { checkRequest, type Message } from '../../tests/helpers/envoy-messages.ts';

const env = process.env;
const protos = (await import(
  path.join(import.meta.dirname, '../../dist/src/extauth/envoy-protos.js')
)) as typeof EnvoyProtos;
const definitions = loadPackageDefinition(loadSync([protos.AUTHORIZATION_PROTO], protos.LOADER_OPTIONS));
type Check = (request: Message, callback: (err: ServiceError | null, response: Message) => void) => void;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the package tree proto-loader builds
const Authorization = (definitions as any).envoy.service.auth.v3.Authorization as new (
  address: string,
  creds: ReturnType<typeof credentials.createInsecure>,
) => Client & { Check: Check };
const client = new Authorization(env.ADDRESS!, credentials.createInsecure());
const request = checkRequest(env.TARGET ?? '/', { 'x-api-key': env.SECRET ?? '' });
const endsAt = performance.now() + Number(env.SECONDS ?? 5) * 1000;
const took: number[] = [];
let ok = 0;

async function caller(): Promise<void> {
  while (performance.now() < endsAt) {
    const started = performance.now();
    const response = await new Promise<Message>((resolve, reject) =>
      client.Check(request, (err, answer) => (err === null ? resolve(answer) : reject(err))),
    );
    took.push(performance.now() - started);
    if (response.ok_response !== undefined) ok++;
  }
}

await Promise.all(Array.from({ length: Number(env.IN_FLIGHT ?? 25) }, caller));
client.close();
took.sort((a, b) => a - b);
const at = (q: number) => took[Math.min(took.length - 1, Math.floor(q * took.length))] ?? NaN;
process.stdout.write(`${JSON.stringify({ requests: took.length, ok, p50: at(0.5), p99: at(0.99) })}\n`);
