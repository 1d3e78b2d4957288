import {
  STATUS_CODES,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { createProxyMiddleware, proxyEventsPlugin } from 'http-proxy-middleware';
import type { Options } from 'http-proxy-middleware';
import { errorResponse, type ErrorCode } from '../errors.js';
import type { ProxyOutcome } from '../ops/metrics.js';
import { answeredEnd, tracer } from '../tracing/tracer.js';
import { backendOutcome, enter, finished, type Entered } from './entry.js';
import { backendHeaders, requestIdOf } from './forwarding-headers.js';
import type { ProxyDeps } from './handler.js';
import { addLimitHeaders } from './rate-limit-headers.js';
import { backendFacts } from './request-context.js';
import type { RequestTarget } from './request-target.js';
import { forwardedPath } from './routing.js';
import { ownField, setOwnField } from '../net/own-field.js';

export type UpgradeDeps = ProxyDeps;

export interface UpgradeHandler {
  (req: IncomingMessage, socket: Duplex, head: Buffer, target: RequestTarget | undefined): void;
  /**
   * Ends every open WebSocket connection, client and backend side. `server.close()` does not: an
   * upgraded socket has left HTTP, so shutdown would otherwise wait for clients to hang up.
   */
  close(): void;
}

/** One upgrade under way: what `enter` found, and whether the backend's answer is counted yet. */
interface Upgrade {
  readonly entry: Entered;
  settled: boolean;
}

/** A WebSocket handshake keeps these two hop-by-hop headers: they are the handshake. */
const HANDSHAKE = new Set(['connection', 'upgrade']);

function writeResponse(socket: Duplex, status: number, headers: OutgoingHttpHeaders, body: string): void {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nconnection: close\r\n`;
  for (const name in headers) head += `${name}: ${String(headers[name])}\r\n`;
  socket.end(head + '\r\n' + body);
}

function writeError(socket: Duplex, code: ErrorCode, requestId: string): void {
  const { status, headers, body } = errorResponse(code, { 'x-request-id': requestId });
  writeResponse(socket, status, headers, body);
}

/** Turns `[name, value, …]` back into the object httpxy copies its outgoing headers from. */
function toHeaders(list: string[]): IncomingHttpHeaders {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    const value = list[i + 1]!;
    const seen = ownField(headers, name);
    setOwnField(
      headers,
      name,
      seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value],
    );
  }
  return headers;
}

/**
 * WebSocket upgrades: authenticated and limited by the same code as plain requests (one upgrade is
 * one request against the key's quota), routed by the same table, then proxied by
 * http-proxy-middleware, which undici can't do. The backend sees the same headers a plain request
 * would, plus the handshake.
 */
export function createUpgradeHandler(deps: UpgradeDeps): UpgradeHandler {
  const pending = new WeakMap<IncomingMessage, Upgrade>();
  const open = new Set<Duplex>();
  const track = (socket: Duplex): void => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };

  const settle = (req: IncomingMessage, status: number, outcome: ProxyOutcome, code?: ErrorCode): void => {
    const upgrade = pending.get(req);
    if (upgrade === undefined || upgrade.settled) return;
    upgrade.settled = true;
    deps.metrics.proxyRequests.inc({ outcome });
    // As for any request: successful when the backend answered below 400 (a 101, or a plain 200 from
    // a backend that speaks no WebSocket); a 502 or 504 of Tollgate's own: the backend was unreachable.
    const usageOutcome = outcome === 'forwarded' ? backendOutcome(status) : 'backendUnreachable';
    const { context, admission } = upgrade.entry;
    finished(
      deps,
      req,
      context,
      { key: admission.key, status, outcome: usageOutcome, cost: admission.cost },
      code,
    );
  };

  const options = (upgradeTimeout: number): Options<IncomingMessage> => ({
    // Each upgrade goes to the origin of its route, fixed when it was routed.
    router: (req: IncomingMessage) => pending.get(req)!.entry.context.route.upstream.origin,
    changeOrigin: true,
    // Tollgate sets X-Forwarded-* itself, honouring TRUST_PROXY.
    xfwd: false,
    upgradeTimeout,
    // Of the default plugins only the one wiring `on`: the others log through console and answer
    // errors with text bodies.
    ejectPlugins: true,
    plugins: [proxyEventsPlugin],
    on: {
      open: (proxySocket: Socket) => track(proxySocket),
      proxyReqWs: (proxyReq: ClientRequest, req: IncomingMessage) => {
        // Runs before httpxy writes the 101 from these headers: the client gets them too.
        proxyReq.once('upgrade', (proxyRes: IncomingMessage) => {
          const upgrade = pending.get(req);
          if (upgrade !== undefined) {
            const { context, admission } = upgrade.entry;
            proxyRes.headers['x-request-id'] = context.requestId;
            if (admission.limit !== undefined)
              addLimitHeaders(proxyRes.headers, admission.limit, deps.clock());
          }
          settle(req, 101, 'forwarded');
        });
        proxyReq.once('response', (res: IncomingMessage) => settle(req, res.statusCode ?? 502, 'forwarded'));
      },
      error: (err: Error, req: IncomingMessage, res: unknown) => {
        const socket = res as Socket;
        const upgrade = pending.get(req);
        const timedOut = (err as { code?: string }).code === 'ERR_UPSTREAM_UPGRADE_TIMEOUT';
        if (upgrade !== undefined && !upgrade.settled && socket.writable) {
          // The handshake never completed: the client can still be told why, in JSON.
          const requestId = upgrade.entry.context.requestId;
          deps.logger.warn({ reqId: requestId, err: err.message }, 'backend upgrade failed');
          writeError(socket, timedOut ? 'gateway_timeout' : 'bad_gateway', requestId);
        } else {
          socket.destroy();
        }
        settle(
          req,
          timedOut ? 504 : 502,
          timedOut ? 'upstream_timeout' : 'upstream_error',
          timedOut ? 'gateway_timeout' : 'bad_gateway',
        );
      },
    },
  });
  /** One proxy per backend deadline in use (the deadline is a proxy's option, the target is not). */
  const proxies = new Map<number, ReturnType<typeof createProxyMiddleware>>();
  const proxyFor = (timeoutMs: number) => {
    let proxy = proxies.get(timeoutMs);
    if (proxy === undefined) proxies.set(timeoutMs, (proxy = createProxyMiddleware(options(timeoutMs))));
    return proxy;
  };

  const handle = async (
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: RequestTarget | undefined,
  ): Promise<void> => {
    const receivedAt = performance.now();
    const requestId = requestIdOf(req.headers);
    // The handshake is the request its SERVER span covers, ended by its answer (101 or an error).
    if (tracer !== undefined) tracer.proxied(req, requestId);
    const entry = await enter(deps, req, target, requestId, receivedAt, socket);
    if (!entry.entered) {
      if (entry.refusal !== undefined)
        writeResponse(socket, entry.refusal.status, entry.refusal.headers, entry.refusal.body);
      return;
    }
    const { context, admission } = entry;
    const route = context.route;
    // A WebSocket holds its places while it is open: they go back when the client's socket closes.
    if (admission.release !== undefined) socket.once('close', admission.release);

    const headers = backendHeaders(
      req.headers,
      backendFacts(context, admission, deps.config.customerIdHeader),
      HANDSHAKE,
    );
    const path = forwardedPath(route, context.path);
    if (tracer !== undefined) tracer.forwarding(req, headers, route.upstream.origin + path);
    req.headers = toHeaders(headers);
    req.url = path + context.search;
    pending.set(req, { entry, settled: false });
    proxyFor(route.timeoutMs).upgrade(req, socket as Socket, head);
  };

  const handler = (
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: RequestTarget | undefined,
  ): void => {
    // A client error before the handshake settles must not become an unhandled 'error' event.
    socket.on('error', () => socket.destroy());
    track(socket);
    handle(req, socket, head, target).catch((err: unknown) => {
      deps.logger.error({ err }, 'upgrade failure');
      socket.destroy();
      // Its trace ends here unless `finished` ended it before the failure.
      if (tracer !== undefined) tracer.finished(answeredEnd(req, 500, undefined, 'internal_error'));
    });
  };
  return Object.assign(handler, {
    close: () => {
      for (const socket of open) socket.destroy();
    },
  });
}
