import type { IncomingMessage } from 'node:http';
import type { Config } from '../config.js';
import { CATCH_ALL_ROUTE_LABEL, type Metrics } from '../ops/metrics.js';
import { buildRouteIndex, type RouteIndex } from '../routes/route-index.js';
import { normalisedPath } from '../plans/normalised-path.js';
import { corsPolicyOf } from '../plans/cors-policy.js';
import type { RouteConfig } from '../plans/route.js';
import { corsRuleOf, type CorsRule } from './cors.js';
import { upstreamPrefix } from './request-target.js';
import { Upstreams, type Upstream } from './upstreams.js';

/**
 * Where a routed request goes, fixed when it is routed: a request in flight finishes on the route it
 * started on, whatever the table becomes meanwhile. The code after admission reads it from `Entered`.
 */
export interface RouteTarget {
  /** The route's id; null: the catch-all, UPSTREAM_URL. */
  readonly routeId: string | null;
  /** Its `route` label in the metrics. */
  readonly label: string;
  readonly upstream: Upstream;
  /** The path of the upstream URL without its trailing slash, prefixed to every forwarded path. */
  readonly upstreamPath: string;
  /** How many characters of the request path are not forwarded: the route's prefix with `stripPrefix`, else 0. */
  readonly strip: number;
  readonly timeoutMs: number;
  /** Its CORS policy; undefined: none (a preflight is forwarded like any request). */
  readonly cors: CorsRule | undefined;
}

/** The path the backend receives (without the query): the upstream's path, then the request's, less a stripped prefix. */
export function forwardedPath(target: RouteTarget, path: string): string {
  return target.upstreamPath + (target.strip === 0 ? path : path.slice(target.strip) || '/');
}

export interface RoutingOptions {
  readonly config: Pick<
    Config,
    'upstreamUrl' | 'upstreamTimeoutMs' | 'corsAllowedOrigins' | 'customerIdHeader'
  >;
  readonly metrics: Metrics;
  /** Most keep-alive connections to each backend origin (default 128); further requests queue. */
  readonly connections?: number;
}

/**
 * The proxy's side of the route table: the index of targets the hot path matches, and a connection
 * pool per backend origin. Rebuilt whole at every change of the table (`apply`), never per request.
 */
export class Routing {
  private index: RouteIndex<RouteTarget>;
  /**
   * The catch-all's policy (CORS_ALLOWED_ORIGINS), for the requests no route takes: it answers their
   * preflights, and lets a page read their 404 when there is no catch-all.
   */
  readonly unroutedCors: CorsRule | undefined;
  private readonly upstreams: Upstreams;

  constructor(private readonly options: RoutingOptions) {
    this.upstreams = new Upstreams({
      connections: options.connections ?? 128,
      timeoutMs: options.config.upstreamTimeoutMs,
    });
    const { corsAllowedOrigins, customerIdHeader } = options.config;
    this.unroutedCors =
      corsAllowedOrigins.length === 0
        ? undefined
        : corsRuleOf(corsPolicyOf({ allowedOrigins: corsAllowedOrigins }), null, customerIdHeader);
    this.index = this.indexOf([]);
  }

  /** Takes a new table: pools for new origins are opened, those no route uses any more retired. */
  apply(routes: readonly RouteConfig[]): void {
    this.index = this.indexOf(routes);
  }

  /**
   * The target of a request (`path` in normal form, plans/normalised-path.ts), held until the request
   * is finished (release its upstream then); undefined when no route takes it and there is no catch-all.
   */
  route(req: IncomingMessage, path: string): RouteTarget | undefined {
    const target = this.index.match(req.headers.host, req.method!, path);
    target?.upstream.hold();
    return target;
  }

  /**
   * The route id a request would take, as `route` finds it, holding nothing (verify forwards nothing):
   * null for the catch-all, undefined when none takes it. `host` is its Host header; without one only
   * routes for every host match.
   */
  routeIdOf(host: string | undefined, method: string, path: string): string | null | undefined {
    return this.index.match(host, method, path)?.routeId;
  }

  /**
   * The CORS policy for a request of `method` (a preflight's requested method: the route that will take
   * the page's request, not the OPTIONS before it), holding nothing; the catch-all's when no route takes it.
   */
  corsOf(host: string | undefined, method: string, path: string): CorsRule | undefined {
    const target = this.index.match(host, method, path);
    return target === undefined ? this.unroutedCors : target.cors;
  }

  /** After the server has drained. */
  close(): Promise<void> {
    return this.upstreams.close();
  }

  private indexOf(routes: readonly RouteConfig[]): RouteIndex<RouteTarget> {
    const { config, metrics } = this.options;
    const urls = routes.map((route) => new URL(route.upstreamUrl));
    const catchAll = config.upstreamUrl;
    const upstreams = this.upstreams.use([
      ...urls.map((url) => url.origin),
      ...(catchAll ? [catchAll.origin] : []),
    ]);
    const targets = routes.map((route, i) => {
      // Request paths are matched in normal form; a prefix stored before it was one may not be.
      const match = { ...route.match, pathPrefix: normalisedPath(route.match.pathPrefix) };
      return {
        match,
        value: {
          routeId: route.routeId,
          label: metrics.routeRequests.labelOf(route.routeId),
          upstream: upstreams.get(urls[i]!.origin)!,
          upstreamPath: upstreamPrefix(urls[i]!),
          strip: route.stripPrefix && match.pathPrefix !== '/' ? match.pathPrefix.length : 0,
          timeoutMs: route.timeoutMs ?? config.upstreamTimeoutMs,
          cors:
            route.cors === null
              ? undefined
              : corsRuleOf(route.cors, route.match.methods, config.customerIdHeader),
        },
      };
    });
    const fallback: RouteTarget | undefined = catchAll && {
      routeId: null,
      label: CATCH_ALL_ROUTE_LABEL,
      upstream: upstreams.get(catchAll.origin)!,
      upstreamPath: upstreamPrefix(catchAll),
      strip: 0,
      timeoutMs: config.upstreamTimeoutMs,
      cors: this.unroutedCors,
    };
    return buildRouteIndex(targets, fallback);
  }
}
