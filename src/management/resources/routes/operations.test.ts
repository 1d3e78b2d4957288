/**
 * Every status the OpenAPI document lists for each route table operation (routes.ts), and how a caller
 * meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the
 * embedded store, checks each answer against the document, and fails when a documented status or code
 * has no block here.
 */
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  succeeds,
  uniqueId,
  whileTheDatabaseIsGone,
  whileWritesAreRefused,
  withA65KiBBody,
  withAnotherMethod,
  withAnUndecodableId,
  withATextBody,
  withMalformedJson,
  withoutTheScope,
  withoutValidToken,
  type Harness,
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
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
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  listRoutes: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },

  getRoute: {
    valid: async (harness) => ({ params: { routeId: (await route(harness)).routeId } }),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { route_not_found: all((t) => t.send({ params: UNKNOWN_ROUTE }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { route_not_found: all((t) => t.send({ params: UNKNOWN_ROUTE }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      // Moved onto the path prefix another route takes.
      409: {
        route_exists: async (t) =>
          t.send({ body: { match: { pathPrefix: (await route(t.harness)).pathPrefix } } }),
      },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  deleteRoute: {
    valid: async (harness) => ({ params: { routeId: (await route(harness)).routeId } }),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { route_not_found: all((t) => t.send({ params: UNKNOWN_ROUTE }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },
});
