/**
 * Envoy as Tollgate's gRPC listener (EXTAUTH_GRPC_PORT) sees it: clients built from Envoy's own
 * .proto files (protos/), and the messages its ext_authz and rate limit filters send.
 */
import {
  credentials,
  loadPackageDefinition,
  type ChannelOptions,
  type Client,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { AUTHORIZATION_PROTO, LOADER_OPTIONS, RATE_LIMIT_PROTO } from './envoy-protos.js';
import { checkRequest, type Message } from './envoy-messages.js';

export { checkRequest, rateLimitRequest, type Message } from './envoy-messages.js';

type Unary = (request: Message, callback: (err: ServiceError | null, response: Message) => void) => void;
type ServiceClient = Client & Record<string, Unary>;
type ServiceConstructor = new (
  address: string,
  creds: ReturnType<typeof credentials.createInsecure>,
  options: ChannelOptions,
) => ServiceClient;

const definitions = loadPackageDefinition(loadSync([AUTHORIZATION_PROTO, RATE_LIMIT_PROTO], LOADER_OPTIONS));
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the package tree proto-loader builds
const services = (definitions as any).envoy.service;

/** Both of Envoy's services at `address` (`host:port`), over channels of `options`; `close()` when done. */
export class EnvoyClient {
  private readonly authorization: ServiceClient;
  private readonly rateLimits: ServiceClient;

  constructor(address: string, options: ChannelOptions = {}) {
    const Authorization = services.auth.v3.Authorization as ServiceConstructor;
    const RateLimitService = services.ratelimit.v3.RateLimitService as ServiceConstructor;
    this.authorization = new Authorization(address, credentials.createInsecure(), options);
    this.rateLimits = new RateLimitService(address, credentials.createInsecure(), options);
  }

  /**
   * ext_authz's call for `GET target` with `headers`, from 198.51.100.7; `http` replaces fields of its
   * `attributes.request.http` (a method, a body).
   */
  check(target: string, headers: Record<string, string>, http?: Message): Promise<Message> {
    return call(this.authorization, 'Check', checkRequest(target, headers, http));
  }

  /** The rate limit filter's call. */
  shouldRateLimit(request: Message): Promise<Message> {
    return call(this.rateLimits, 'ShouldRateLimit', request);
  }

  close(): void {
    this.authorization.close();
    this.rateLimits.close();
  }
}

const call = (client: ServiceClient, method: string, request: Message) =>
  new Promise<Message>((resolve, reject) =>
    client[method]!(request, (err, response) => (err === null ? resolve(response) : reject(err))),
  );
