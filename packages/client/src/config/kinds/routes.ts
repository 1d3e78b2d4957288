/** Routes, identified by `routeId`. */
import type { components } from '../../generated/management-api.js';
import { answerOf } from '../api-call.js';
import type { RouteItem } from '../config-file.js';
import type { Kind } from '../kind.js';
import { changedSettings, matchSettings } from '../settings.js';

type Route = components['schemas']['Route'];

/** A route's settings with the defaults filled in as the service shows them. */
function settingsOf(route: RouteItem | Route) {
  return {
    match: matchSettings({
      ...route.match,
      // The service stores a host in lower case: `API.Example.com` is the same setting.
      host: route.match.host?.toLowerCase() ?? null,
      methods: route.match.methods ?? null,
    }),
    upstreamUrl: route.upstreamUrl,
    stripPrefix: route.stripPrefix ?? false,
    timeoutMs: route.timeoutMs ?? null,
    // The service fills in a policy's defaults (docs/guides/routes.md): compared so.
    cors:
      route.cors == null
        ? null
        : {
            allowedHeaders: [],
            exposedHeaders: [],
            allowCredentials: false,
            maxAgeSeconds: 600,
            ...route.cors,
          },
  };
}

export const routes: Kind<RouteItem, Route> = {
  section: 'routes',
  noun: 'route',
  list: async (client) => (await answerOf(client.GET('/tollgate/routes'))).routes,
  identityOfItem: (item) => item.routeId,
  identityOf: (route) => route.routeId,
  differences: (item, route) => changedSettings(settingsOf(item), settingsOf(route)),
  async create(client, item) {
    await answerOf(client.POST('/tollgate/routes', { body: item }));
  },
  async update(client, route, patch) {
    await answerOf(
      client.PATCH('/tollgate/routes/{routeId}', {
        params: { path: { routeId: route.routeId } },
        body: patch,
      }),
    );
  },
  async remove(client, route) {
    await answerOf(
      client.DELETE('/tollgate/routes/{routeId}', { params: { path: { routeId: route.routeId } } }),
    );
  },
  exported: (route) => ({ routeId: route.routeId, ...settingsOf(route) }),
};
