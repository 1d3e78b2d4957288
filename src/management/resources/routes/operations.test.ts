/**
 * The statuses of each route table operation (operations.ts) that are its own, and how a caller meets
 * each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived
 * from its definition, runs each block against an app on the embedded store, checks each answer against
 * the document, and fails when a documented status or code has no way to it.
 */
import {
  describeOperations,
  type Harness,
  succeeds,
  uniqueId,
} from '../../../../tests/helpers/operation-test-kit.js';
import { routeOperations } from './operations.js';

const UNKNOWN_ROUTE = { routeId: 'no-such-route' };
/** Nothing listens there: no call of these tests forwards a request. */
const BACKEND = 'http://127.0.0.1:9/api';

/** A route of its own: an id and a path prefix no other route of the store has. */
const routeBody = () => {
  const routeId = uniqueId('route');
  return { routeId, match: { pathPrefix: `/${routeId}` }, upstreamUrl: BACKEND };
};

/** A new route; its id and path prefix. */
async function route(harness: Harness): Promise<{ routeId: string; pathPrefix: string }> {
  const body = routeBody();
  await harness.create('/tollgate/routes', body);
  return { routeId: body.routeId, pathPrefix: body.match.pathPrefix };
}

describeOperations(routeOperations, {
  createRoute: {
    valid: () => ({ body: routeBody() }),
    statuses: {
      201: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { ...routeBody(), upstreamUrl: 'ftp://127.0.0.1/' } }),
      },
      // Routes are never overwritten, and no two take the same requests.
      409: {
        route_exists: async (t) => {
          const taken = await route(t.harness);
          return [
            await t.send({ body: { ...routeBody(), routeId: taken.routeId } }),
            await t.send({ body: { ...routeBody(), match: { pathPrefix: taken.pathPrefix } } }),
          ];
        },
      },
    },
  },

  listRoutes: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
    },
  },

  getRoute: {
    valid: async (harness) => ({ params: { routeId: (await route(harness)).routeId } }),
    statuses: {
      200: succeeds,
      404: { route_not_found: (t) => t.send({ params: UNKNOWN_ROUTE }) },
    },
  },

  updateRoute: {
    valid: async (harness) => ({
      params: { routeId: (await route(harness)).routeId },
      body: { timeoutMs: 2_000 },
    }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { timeoutMs: 0 } }),
      },
      404: { route_not_found: (t) => t.send({ params: UNKNOWN_ROUTE }) },
      // Moved onto the path prefix another route takes.
      409: {
        route_exists: async (t) =>
          t.send({ body: { match: { pathPrefix: (await route(t.harness)).pathPrefix } } }),
      },
    },
  },

  deleteRoute: {
    valid: async (harness) => ({ params: { routeId: (await route(harness)).routeId } }),
    statuses: {
      200: succeeds,
      404: { route_not_found: (t) => t.send({ params: UNKNOWN_ROUTE }) },
    },
  },
});
