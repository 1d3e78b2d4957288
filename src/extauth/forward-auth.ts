/**
 * Forward auth on EXTAUTH_PORT: nginx `auth_request`, Caddy `forward_auth`, Traefik `ForwardAuth` and
 * Envoy's HTTP ext_authz ask here whether a client's request may pass. Every method and path is such
 * a question (an API may have a path like any of Tollgate's own). Admitted: 200, empty, with the
 * headers for the backend; refused: the proxy's own answer (docs/guides/external-authorization.md).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { sendError } from '../errors.js';
import { canonicalAddress } from '../net/canonical-address.js';
import { credentialOf } from '../proxy/credential.js';
import { customerIdOf, requestIdOf } from '../proxy/forwarding-headers.js';
import { CallerGoneError, decide, type ExtauthDeps, type GatewayRequest } from './gateway-decision.js';

const single = (value: string | string[] | undefined): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/**
 * The client's address: the `hops`-th entry of X-Forwarded-For from its end (1: the last, the one the
 * gateway added; entries before it are the client's own say). Undefined when the gateway sent fewer.
 */
export function clientOf(forwardedFor: string | string[] | undefined, hops: number): string | undefined {
  if (forwardedFor === undefined) return undefined;
  const chain = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  const entry = chain[chain.length - hops]?.trim();
  return entry === undefined || entry === '' ? undefined : canonicalAddress(entry);
}

/** Whether a gateway named a fact in both conventions, differently. */
const disagree = (forwarded: string | undefined, original: string | undefined): boolean =>
  forwarded !== undefined && original !== undefined && forwarded !== original;

/**
 * The client's request as each gateway passes it: the original method and path in
 * `X-Forwarded-Method`/`-Uri` (Caddy, Traefik), else `X-Original-Method`/`-URI` (nginx), else the
 * call's own (Envoy, with an empty `path_prefix`); the host in `X-Forwarded-Host`, else `Host`. A
 * gateway passes the client's headers it does not set itself: when both conventions are there and
 * differ, one is the client's say, and the request is refused rather than guessed.
 */
export function forwardAuthRequest(
  req: IncomingMessage,
  deps: Pick<ExtauthDeps, 'config'> & { readonly trustedHops: number },
  receivedAt: number,
): GatewayRequest {
  const headers: IncomingHttpHeaders = req.headers;
  const forwardedMethod = single(headers['x-forwarded-method'])?.toUpperCase();
  const originalMethod = single(headers['x-original-method'])?.toUpperCase();
  const forwardedUri = single(headers['x-forwarded-uri']);
  const originalUri = single(headers['x-original-uri']);
  return {
    requestId: requestIdOf(headers),
    receivedAt,
    method: forwardedMethod ?? originalMethod ?? req.method!.toUpperCase(),
    target: forwardedUri ?? originalUri ?? req.url,
    conflicting: disagree(forwardedMethod, originalMethod) || disagree(forwardedUri, originalUri),
    host: single(headers['x-forwarded-host']) ?? headers.host,
    client: clientOf(headers['x-forwarded-for'], deps.trustedHops),
    secret: credentialOf(headers),
    origin: headers.origin,
    referer: headers.referer,
    customerId: customerIdOf(headers, deps.config.customerIdHeader),
  };
}

export type ForwardAuthDeps = ExtauthDeps & { readonly trustedHops: number };

/** The listener's request handler. */
export function createForwardAuthHandler(
  deps: ForwardAuthDeps,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const receivedAt = performance.now();
    void answer(deps, req, res, receivedAt).catch((err: unknown) => {
      // Its gateway closed the connection while it was decided: nobody to answer.
      if (err instanceof CallerGoneError) return;
      // A bug, not a refusal: 500, and the listener goes on.
      deps.logger.error({ err }, 'forward auth failure');
      if (!res.headersSent) sendError(res, 'internal_error');
      else res.destroy();
    });
  };
}

async function answer(
  deps: ForwardAuthDeps,
  req: IncomingMessage,
  res: ServerResponse,
  receivedAt: number,
): Promise<void> {
  const decision = await decide(
    deps,
    'forward_auth',
    forwardAuthRequest(req, deps, receivedAt),
    () => res.destroyed,
  );
  if (!decision.admitted) {
    const { status, headers, body } = decision.answer;
    res.writeHead(status, headers);
    res.end(body);
    return;
  }
  const flat: string[] = ['content-length', '0'];
  for (const [name, value] of decision.upstream) flat.push(name, value);
  for (const [name, value] of decision.limitHeaders) flat.push(name, value);
  res.writeHead(200, flat);
  res.end();
}
