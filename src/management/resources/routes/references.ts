/**
 * Route ids a key's `allowedRouteIds` or a plan's matches name must be routes of the table when they
 * are written (docs/guides/routes.md: 400 naming the field). A route deleted later is not refused for them: the
 * match then takes no request, and a key allowed only there is allowed nowhere.
 */
import type { RouteRepository } from '../../../store/route-repository.js';
import { invalid } from '../../validation.js';

/** Each field with the route ids it names. */
export type RouteReferences = readonly (readonly [
  field: string,
  routeIds: readonly string[] | null | undefined,
])[];

/** Throws 400 `validation_failed` naming every route id no route has. */
export async function checkRouteReferences(
  references: RouteReferences,
  routes: RouteRepository,
): Promise<void> {
  if (!references.some(([, ids]) => ids && ids.length > 0)) return;
  const known = new Set((await routes.list()).map((route) => route.routeId));
  const details = references.flatMap(([field, ids]) =>
    (ids ?? []).flatMap((id, i) =>
      known.has(id) ? [] : [{ field: `${field}.${i}`, message: `names no route ("${id}")` }],
    ),
  );
  if (details.length > 0) throw invalid(details);
}

/** The route ids a plan's limits and costs name, by field. */
export function planRouteReferences(plan: {
  limits?: readonly { match?: { routeIds?: readonly string[] } }[];
  costs?: readonly { match: { routeIds?: readonly string[] } }[];
}): RouteReferences {
  return [
    ...(plan.limits ?? []).map((l, i) => [`limits.${i}.match.routeIds`, l.match?.routeIds] as const),
    ...(plan.costs ?? []).map((c, i) => [`costs.${i}.match.routeIds`, c.match.routeIds] as const),
  ];
}
