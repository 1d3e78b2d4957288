import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { errorResponse } from './errors.js';
import { MANAGEMENT_PATHS, TOLLGATE_ROOT } from './management/resources/index.js';
import type { Duplex } from 'node:stream';
import { originForm, type RequestTarget } from './proxy/request-target.js';

/** Each route as its segments; `:name` stands for one non-empty segment. */
const ROUTE_SEGMENTS = MANAGEMENT_PATHS.map((path) => path.split('/').slice(1));
/** The first segments of the routes: every other path is proxied after one look-up. */
const FIRST_SEGMENTS = new Set(ROUTE_SEGMENTS.map((segments) => segments[0]));

function matchesRoute(segments: readonly string[], route: readonly string[]): boolean {
  if (segments.length !== route.length) return false;
  for (let i = 0; i < route.length; i++) {
    const part = route[i]!;
    if (part.startsWith(':') ? segments[i] === '' : part !== segments[i]) return false;
  }
  return true;
}

/**
 * Whether a raw path (no query, not decoded) is a management route: one of `MANAGEMENT_PATHS` exactly, or under
 * `TOLLGATE_ROOT`. Anything else, including encoded or dotted variants, is proxied, and the proxy
 * refuses dot segments.
 */
export function isManagementPath(path: string, prefix: string): boolean {
  if (prefix !== '') {
    if (!path.startsWith(prefix)) return false;
    path = path.slice(prefix.length);
  }
  if (path.charCodeAt(0) !== 47 /* '/' */) return false;
  if (path === TOLLGATE_ROOT || path.startsWith(TOLLGATE_ROOT + '/')) return true;
  const end = path.indexOf('/', 1);
  if (!FIRST_SEGMENTS.has(end === -1 ? path.slice(1) : path.slice(1, end))) return false;
  const segments = path.slice(1).split('/');
  return ROUTE_SEGMENTS.some((route) => matchesRoute(segments, route));
}

export interface PublicServerOptions {
  readonly managementApp: (req: IncomingMessage, res: ServerResponse) => void;
  /** `target`: the request target as parsed here, in origin form; undefined: refused (another host, …). */
  readonly proxy: (req: IncomingMessage, res: ServerResponse, target: RequestTarget | undefined) => void;
  /** Verify's own route, outside the management app (its hot path): answers (and returns true) for it. */
  readonly verify?: (req: IncomingMessage, res: ServerResponse, path: string) => boolean;
  /** The developer portal (src/portal/): answers (and returns true) for its sign-in, API and pages. */
  readonly portal?: (req: IncomingMessage, res: ServerResponse, path: string) => boolean;
  /** The web console: answers (and returns true) for the paths under it; absent with CONSOLE=off. */
  readonly console?: (req: IncomingMessage, res: ServerResponse, path: string) => boolean;
  /** WebSocket upgrades on proxied paths; without it, upgrade requests are proxied as plain HTTP. */
  readonly upgrade?: (
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: RequestTarget | undefined,
  ) => void;
  readonly managementPrefix: string;
  /** Whole request head must arrive within this (slow-header clients). Default 15 s. */
  readonly headersTimeoutMs?: number;
  /** Whole request, body included, must arrive within this (slow-body clients). Default 300 s. */
  readonly requestTimeoutMs?: number;
  /** Default 16 KiB, Node's own default, stated so it can't drift. */
  readonly maxHeaderSize?: number;
  /**
   * Idle keep-alive connections close after this. Default 65 s: longer than the 60 s idle timeout of
   * common load balancers, so they never reuse a connection Tollgate is closing.
   */
  readonly keepAliveTimeoutMs?: number;
}

/** A request's target in origin form, whatever form it was sent in: parsed here once, for the proxy too. */
const targetOf = (req: IncomingMessage): RequestTarget | undefined =>
  originForm(req.url ?? '/', req.headers.host);

/** Management routes serve no WebSocket: the upgrade is answered 404 and the connection closed. */
function refuseUpgrade(socket: Duplex): void {
  const { status, headers, body } = errorResponse('not_found', { connection: 'close' });
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  socket.end(head + '\r\n' + body);
}

/**
 * `Expect: 100-continue` on a management route: the 100 goes out when the app starts reading the body, which
 * it does only once the caller is authenticated (and allowed, and the declared size fits), so a refused
 * caller never uploads, as on the proxy (docs/guides/operations.md). A refusal sent before that closes the
 * connection: the client may still send the body it was not asked for.
 */
function continueOnRead(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
  req.once('resume', () => {
    if (res.headersSent) return;
    res.removeHeader('connection');
    res.writeContinue();
  });
}

/**
 * The one public listener: management routes to the management app, everything else to the proxy.
 * Routing compares the raw path, so `/consumer-api-key/%2e%2e` is a management path (the app refuses
 * it) and `/x/..%2fconsumer-api-key` is a proxied one (the proxy refuses it): nothing is decoded twice.
 */
export function createPublicServer(options: PublicServerOptions): Server {
  const { managementApp, proxy, upgrade, managementPrefix, console: serveConsole, verify, portal } = options;
  const route = (req: IncomingMessage, res: ServerResponse, expectsContinue = false): void => {
    const target = targetOf(req);
    const path = target?.path;
    if (path !== undefined && serveConsole?.(req, res, path)) return;
    if (path !== undefined && isManagementPath(path, managementPrefix)) {
      if (expectsContinue) continueOnRead(req, res);
      // The portal's paths are under /tollgate/: a proxied request never asks the portal.
      if (portal?.(req, res, path)) return;
      if (!verify?.(req, res, path)) managementApp(req, res);
    } else proxy(req, res, target);
  };
  const server = createServer(
    {
      headersTimeout: options.headersTimeoutMs ?? 15_000,
      requestTimeout: options.requestTimeoutMs ?? 300_000,
      maxHeaderSize: options.maxHeaderSize ?? 16_384,
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 65_000,
      // How often the two request deadlines above are checked (Node's default is every 30 s).
      connectionsCheckingInterval: 1_000,
      // Only WebSocket upgrades leave HTTP; an `Upgrade: h2c` request is answered as plain HTTP.
      shouldUpgradeCallback: (req) =>
        upgrade !== undefined && req.headers.upgrade?.toLowerCase() === 'websocket',
    },
    route,
  );
  // With this listener Node no longer answers `Expect: 100-continue` itself: the proxy sends the 100
  // only once the request is authenticated and within its limit, a management route once its caller
  // is authenticated (continueOnRead), so a refused client never uploads.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => route(req, res, true));
  if (upgrade !== undefined) {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const target = targetOf(req);
      if (target !== undefined && isManagementPath(target.path, managementPrefix)) refuseUpgrade(socket);
      else upgrade(req, socket, head, target);
    });
  }
  return server;
}
