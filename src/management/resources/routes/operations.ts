/** The route table: which requests go to which backend (docs/guides/routes.md). */
import { isDeepStrictEqual } from 'node:util';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../../errors.js';
import { normalisedPath } from '../../../plans/normalised-path.js';
import { corsPolicyOf, type CorsPolicy } from '../../../plans/cors-policy.js';
import type { RouteConfig, RouteMatch } from '../../../plans/route.js';
import type { RouteRepository, RouteRow } from '../../../store/route-repository.js';
import { routeAudit } from '../../audit-views.js';
import { defineOperation } from '../../operation.js';
import { RouteId } from '../../request-match-schemas.js';
import {
  CreateRouteRequest,
  createRouteProblems,
  DeleteRouteResponse,
  ListRoutesResponse,
  RouteResponse,
  UpdateRouteRequest,
  updateRouteProblems,
} from './schemas.js';
import { isoTimestamp } from '../../time-format.js';

const TAG = 'Routes';
const ROUTES_PATH = '/tollgate/routes';
const ROUTE_PATH = `${ROUTES_PATH}/:routeId`;
const routeParams = {
  schema: Type.Object({ routeId: { ...RouteId, description: 'The route id' } }),
  notFound: 'route_not_found',
} as const;
const ROUTE_NOT_FOUND = { route_not_found: 'No route has that id' } as const;
const OVERLAP =
  'Another route has the same host and path prefix (or one differing in case only, where either route is caseInsensitive) and a method in common';
const TAKES_EFFECT =
  'Takes effect on every replica within 1 s; requests already routed finish on the route they started on.';

function routeView(route: RouteRow): RouteResponse {
  return {
    routeId: route.routeId,
    match: {
      host: route.match.host,
      pathPrefix: route.match.pathPrefix,
      methods: route.match.methods === null ? null : [...route.match.methods],
      caseInsensitive: route.match.caseInsensitive,
    },
    upstreamUrl: route.upstreamUrl,
    stripPrefix: route.stripPrefix,
    timeoutMs: route.timeoutMs,
    cors: route.cors === null ? null : corsView(route.cors),
    createdAt: isoTimestamp(route.createdAt),
    lastUpdated: isoTimestamp(route.lastUpdated),
  };
}

/** A policy as stored: its defaults filled in, origins in lower case as they are compared. */
const corsOf = (input: CreateRouteRequest['cors']): CorsPolicy | null =>
  input == null
    ? null
    : corsPolicyOf({ ...input, allowedOrigins: input.allowedOrigins.map((o) => o.toLowerCase()) });
const corsView = (cors: CorsPolicy): NonNullable<RouteResponse['cors']> => ({
  allowedOrigins: [...cors.allowedOrigins],
  allowedHeaders: [...cors.allowedHeaders],
  exposedHeaders: [...cors.exposedHeaders],
  allowCredentials: cors.allowCredentials,
  maxAgeSeconds: cors.maxAgeSeconds,
});

/** A host as stored: in lower case; null for every host. */
const hostOf = (host: string | null | undefined): string | null => host?.toLowerCase() ?? null;

/** A match as stored: absent fields as null, the prefix in normal form as request paths are matched. */
const matchOf = (match: CreateRouteRequest['match']): RouteMatch => ({
  host: hostOf(match.host),
  pathPrefix: normalisedPath(match.pathPrefix),
  methods: match.methods ?? null,
  caseInsensitive: match.caseInsensitive ?? false,
});

/** A match with the fields a PATCH names replaced. */
const changedMatch = (was: RouteMatch, change: NonNullable<UpdateRouteRequest['match']>): RouteMatch => ({
  host: change.host === undefined ? was.host : hostOf(change.host),
  pathPrefix: change.pathPrefix === undefined ? was.pathPrefix : normalisedPath(change.pathPrefix),
  methods: change.methods === undefined ? was.methods : change.methods,
  caseInsensitive: change.caseInsensitive ?? was.caseInsensitive,
});

/** Refuses a match another route already takes, as the table must never hold two such routes. */
async function refuseOverlap(routes: RouteRepository, match: RouteMatch, routeId: string): Promise<void> {
  const other = await routes.overlapping(match, routeId);
  if (other)
    throw new AppError(
      'route_exists',
      `Route ${other.routeId} already takes this host, path prefix and a method in common`,
    );
}

export const routeOperations = [
  defineOperation({
    id: 'createRoute',
    method: 'post',
    path: ROUTES_PATH,
    scope: 'routes:write',
    tag: TAG,
    summary: 'Send the requests a host, path prefix and methods match to a backend',
    description: `A request goes to the route with the longest matching path prefix, then the most specific host (exact, then the longest wildcard, then a route without host); \`methods\` narrows a route. No route: UPSTREAM_URL, the catch-all, else 404 \`route_not_found\`. ${TAKES_EFFECT}`,
    body: { schema: CreateRouteRequest, check: createRouteProblems },
    success: {
      status: 201,
      description: 'Created: the route, its defaults filled in',
      schema: RouteResponse,
      headers: { Location: 'Path of the route' },
    },
    errors: { route_exists: `A route with that routeId exists (routes are not overwritten); or: ${OVERLAP}` },
    async handle({ body, res, ctx }) {
      const config: RouteConfig = {
        routeId: body.routeId,
        match: matchOf(body.match),
        upstreamUrl: body.upstreamUrl,
        stripPrefix: body.stripPrefix ?? false,
        timeoutMs: body.timeoutMs ?? null,
        cors: corsOf(body.cors),
      };
      const now = ctx.now();
      await ctx.audited(res, async ({ routes }) => {
        await routes.lock();
        if (!(await routes.insert(config, now)))
          throw new AppError('route_exists', `A route with id "${config.routeId}" already exists`);
        await refuseOverlap(routes, config.match, config.routeId);
        return {
          result: undefined,
          action: 'route.create',
          target: { type: 'route', id: config.routeId },
          before: null,
          after: routeAudit(config),
        };
      });
      await ctx.announce({ kind: 'routes' });
      res
        .status(201)
        .location(`${ctx.prefix}${ROUTES_PATH}/${config.routeId}`)
        .json(routeView({ ...config, createdAt: now, lastUpdated: now }));
    },
  }),

  defineOperation({
    id: 'listRoutes',
    method: 'get',
    path: ROUTES_PATH,
    scope: 'routes:read',
    tag: TAG,
    summary: 'List the route table, oldest first',
    success: { status: 200, description: 'Every route', schema: ListRoutesResponse },
    async handle({ res, ctx }) {
      res.json({ routes: (await ctx.routes.list()).map(routeView) });
    },
  }),

  defineOperation({
    id: 'getRoute',
    method: 'get',
    path: ROUTE_PATH,
    scope: 'routes:read',
    tag: TAG,
    summary: 'Show a route',
    params: routeParams,
    success: { status: 200, description: 'The route', schema: RouteResponse },
    errors: ROUTE_NOT_FOUND,
    async handle({ params, res, ctx }) {
      const route = await ctx.routes.get(params.routeId);
      if (!route) throw new AppError('route_not_found', 'No route has that id');
      res.json(routeView(route));
    },
  }),

  defineOperation({
    id: 'updateRoute',
    method: 'patch',
    path: ROUTE_PATH,
    scope: 'routes:write',
    tag: TAG,
    summary: "Change a route's match, backend, prefix stripping, timeout or CORS policy",
    description: `Fields of \`match\` left out keep their values. A body that sets only what the route already has changes nothing (no audit entry, \`lastUpdated\` stays). ${TAKES_EFFECT}`,
    params: routeParams,
    body: { schema: UpdateRouteRequest, check: updateRouteProblems },
    success: { status: 200, description: 'The route as it now is', schema: RouteResponse },
    errors: { ...ROUTE_NOT_FOUND, route_exists: OVERLAP },
    async handle({ params: { routeId }, body, res, ctx }) {
      const { route, changed } = await ctx.audited(res, async ({ routes }) => {
        await routes.lock();
        const before = await routes.get(routeId, true);
        if (!before) throw new AppError('route_not_found', 'No route has that id');
        const { createdAt: _createdAt, lastUpdated: _lastUpdated, ...was } = before;
        const after: RouteConfig = {
          ...was,
          ...(body.match && { match: changedMatch(was.match, body.match) }),
          ...(body.upstreamUrl !== undefined && { upstreamUrl: body.upstreamUrl }),
          ...(body.stripPrefix !== undefined && { stripPrefix: body.stripPrefix }),
          ...(body.timeoutMs !== undefined && { timeoutMs: body.timeoutMs }),
          ...(body.cors !== undefined && { cors: corsOf(body.cors) }),
        };
        if (isDeepStrictEqual(after, was))
          return { result: { route: before, changed: false }, unchanged: true as const };
        if (!isDeepStrictEqual(after.match, was.match)) await refuseOverlap(routes, after.match, routeId);
        const { routeId: _id, ...changes } = after;
        const updated = (await routes.update(routeId, changes, ctx.now()))!;
        return {
          result: { route: updated, changed: true },
          action: 'route.update',
          target: { type: 'route', id: routeId },
          before: routeAudit(was),
          after: routeAudit(after),
        };
      });
      if (changed) await ctx.announce({ kind: 'routes' });
      res.json(routeView(route));
    },
  }),

  defineOperation({
    id: 'deleteRoute',
    method: 'delete',
    path: ROUTE_PATH,
    scope: 'routes:write',
    tag: TAG,
    summary: 'Delete a route: its requests go to the next route that matches, or the catch-all',
    description: TAKES_EFFECT,
    params: routeParams,
    success: { status: 200, description: 'Deleted', schema: DeleteRouteResponse },
    errors: ROUTE_NOT_FOUND,
    async handle({ params: { routeId }, res, ctx }) {
      await ctx.audited(res, async ({ routes }) => {
        const before = await routes.get(routeId, true);
        if (!before || !(await routes.delete(routeId)))
          throw new AppError('route_not_found', 'No route has that id');
        return {
          result: undefined,
          action: 'route.delete',
          target: { type: 'route', id: routeId },
          before: routeAudit(before),
          after: null,
        };
      });
      await ctx.announce({ kind: 'routes' });
      const body: DeleteRouteResponse = { routeId, message: `Route ${routeId} has been deleted` };
      res.json(body);
    },
  }),
];
