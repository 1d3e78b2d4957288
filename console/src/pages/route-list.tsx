/** The routes to the backends, most specific first as the proxy matches them: create, edit, delete. */
import { useState } from 'preact/hooks';
import { ScopedButton, ScopedLink } from '../access';
import { api, ok } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { formatNumber } from '../format';
import { useHandoff } from '../handoff';
import { href } from '../route';
import type { GatewayRoute } from '../types';
import { useAction, useApi } from '../use-api';

function DeleteRouteDialog({
  route,
  onDeleted,
  onClose,
}: {
  route: GatewayRoute;
  onDeleted: (message: string) => void;
  onClose: () => void;
}) {
  const action = useAction();
  const remove = async () => {
    const done = await action.run(() =>
      ok(api.DELETE('/tollgate/routes/{routeId}', { params: { path: { routeId: route.routeId } } })),
    );
    if (done) onDeleted(`The route ${route.routeId} is deleted: its requests go to the catch-all now.`);
  };
  return (
    <Dialog open title={`Delete the route ${route.routeId}?`} onClose={onClose}>
      <p>
        Requests it matched go to UPSTREAM_URL from now on, or are refused if none is set. This cannot be
        undone.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
          Delete route
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function RouteListPage() {
  const routes = useApi((signal) => ok(api.GET('/tollgate/routes', { signal })), []);
  const [deleting, setDeleting] = useState<GatewayRoute>();
  const { message, setMessage } = useHandoff();
  return (
    <>
      <PageTitle title="Routes">
        <ScopedLink scope="routes:write" href={href('routes', 'new')}>
          Create route
        </ScopedLink>
      </PageTitle>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={routes.error} />
      {routes.loading && !routes.data && <p role="status">Loading routes…</p>}
      {routes.data &&
        (routes.data.routes.length === 0 ? (
          <p>No route yet: every request goes to UPSTREAM_URL.</p>
        ) : (
          <table class="data">
            <caption class="visually-hidden">Routes</caption>
            <thead>
              <tr>
                <th scope="col">Route</th>
                <th scope="col">Host</th>
                <th scope="col">Path prefix</th>
                <th scope="col">Methods</th>
                <th scope="col">Backend</th>
                <th scope="col">Timeout</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {routes.data.routes.map((r) => (
                <tr key={r.routeId} data-route-id={r.routeId}>
                  <td data-label="Route" class="mono">
                    {r.routeId}
                  </td>
                  <td data-label="Host">{r.match.host ?? 'any'}</td>
                  <td data-label="Path prefix" class="mono">
                    {r.match.pathPrefix}
                    {r.stripPrefix && <div class="muted small">removed before forwarding</div>}
                  </td>
                  <td data-label="Methods">{r.match.methods?.join(', ') ?? 'any'}</td>
                  <td data-label="Backend" class="mono">
                    {r.upstreamUrl}
                  </td>
                  <td data-label="Timeout">
                    {r.timeoutMs === null ? 'default' : `${formatNumber(r.timeoutMs)} ms`}
                  </td>
                  <td class="row-actions">
                    <ScopedLink
                      scope="routes:write"
                      class=""
                      href={href('routes', r.routeId, 'edit')}
                      label={`Edit ${r.routeId}`}
                    >
                      Edit
                    </ScopedLink>
                    <ScopedButton
                      scope="routes:write"
                      class="link danger-text"
                      aria-label={`Delete ${r.routeId}`}
                      onClick={() => setDeleting(r)}
                    >
                      Delete
                    </ScopedButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      {deleting && (
        <DeleteRouteDialog
          route={deleting}
          onClose={() => setDeleting(undefined)}
          onDeleted={(text) => {
            setDeleting(undefined);
            setMessage(text);
            routes.reload();
          }}
        />
      )}
    </>
  );
}
