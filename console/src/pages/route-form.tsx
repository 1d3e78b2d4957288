/** A route created or edited: what it matches (host, path prefix, methods) and the backend it sends to. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { CheckboxGroup } from '../components/checkbox-group';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { handOff } from '../handoff';
import { href, navigate } from '../route';
import type { GatewayRoute, RouteMethod } from '../types';
import { useAction, useApi } from '../use-api';

const METHODS: readonly RouteMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];

function RouteForm({ initial }: { initial?: GatewayRoute }) {
  const [routeId, setRouteId] = useState('');
  const [upstreamUrl, setUpstreamUrl] = useState(initial?.upstreamUrl ?? '');
  const [host, setHost] = useState(initial?.match.host ?? '');
  const [pathPrefix, setPathPrefix] = useState(initial?.match.pathPrefix ?? '/');
  const [methods, setMethods] = useState<readonly RouteMethod[]>(initial?.match.methods ?? []);
  const [caseInsensitive, setCaseInsensitive] = useState(initial?.match.caseInsensitive ?? false);
  const [stripPrefix, setStripPrefix] = useState(initial?.stripPrefix ?? false);
  const [timeout, setTimeoutMs] = useState(initial?.timeoutMs?.toString() ?? '');
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    // Empty host, no method and no timeout mean: every host, every method, the default timeout.
    const body = {
      upstreamUrl: upstreamUrl.trim(),
      match: {
        host: host.trim() || null,
        pathPrefix: pathPrefix.trim(),
        methods: methods.length > 0 ? [...methods] : null,
        caseInsensitive,
      },
      stripPrefix,
      timeoutMs: timeout.trim() === '' ? null : Number(timeout),
    };
    const saved = await action.run(() =>
      initial
        ? ok(
            api.PATCH('/tollgate/routes/{routeId}', { params: { path: { routeId: initial.routeId } }, body }),
          )
        : ok(api.POST('/tollgate/routes', { body: { routeId: routeId.trim(), ...body } })),
    );
    if (saved) {
      handOff({ message: `The route ${saved.routeId} is ${initial ? 'saved' : 'created'}.` });
      navigate(href('routes'));
    }
  };

  return (
    <form class="form" onSubmit={submit} onInput={action.clear}>
      {!initial && (
        <div class="field">
          <label for="route-id">Route id</label>
          <input
            id="route-id"
            required
            maxLength={128}
            pattern="[A-Za-z0-9._:\-]+"
            value={routeId}
            onInput={(e) => setRouteId(e.currentTarget.value)}
            aria-describedby="route-id-help"
          />
          <p id="route-id-help" class="help">
            1–128 characters of letters, digits and . _ : - (plans and keys name the route by it).
          </p>
        </div>
      )}
      <div class="field">
        <label for="route-upstream">Backend URL</label>
        <input
          id="route-upstream"
          type="url"
          required
          value={upstreamUrl}
          onInput={(e) => setUpstreamUrl(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="route-host">Host</label>
        <input
          id="route-host"
          value={host}
          onInput={(e) => setHost(e.currentTarget.value)}
          aria-describedby="route-host-help"
        />
        <p id="route-host-help" class="help">
          Exact (api.example.com) or a wildcard (*.example.com); empty: every host.
        </p>
      </div>
      <div class="field">
        <label for="route-prefix">Path prefix</label>
        <input
          id="route-prefix"
          required
          class="mono"
          value={pathPrefix}
          onInput={(e) => setPathPrefix(e.currentTarget.value)}
          aria-describedby="route-prefix-help"
        />
        <p id="route-prefix-help" class="help">
          Whole path segments: /v1 takes /v1 and /v1/items, never /v10. The longest prefix wins.
        </p>
      </div>
      <label class="checkbox">
        <input
          type="checkbox"
          checked={caseInsensitive}
          onChange={(e) => setCaseInsensitive(e.currentTarget.checked)}
        />
        Ignore case in the path (for a backend that does, as Express does)
      </label>
      <CheckboxGroup
        legend="Methods (none: every method)"
        options={METHODS}
        chosen={methods}
        onChange={setMethods}
      />
      <label class="checkbox">
        <input
          type="checkbox"
          checked={stripPrefix}
          onChange={(e) => setStripPrefix(e.currentTarget.checked)}
        />
        Remove the prefix before forwarding
      </label>
      <div class="field">
        <label for="route-timeout">Timeout (ms)</label>
        <input
          id="route-timeout"
          type="number"
          min={1}
          max={3600000}
          value={timeout}
          onInput={(e) => setTimeoutMs(e.currentTarget.value)}
          aria-describedby="route-timeout-help"
        />
        <p id="route-timeout-help" class="help">
          How long the backend may take to answer; empty: UPSTREAM_TIMEOUT_MS.
        </p>
      </div>
      <ErrorMessage error={action.error} />
      <div class="form-buttons">
        <ScopedButton scope="routes:write" type="submit" disabled={action.busy}>
          {initial ? 'Save route' : 'Create route'}
        </ScopedButton>
        <a href={href('routes')}>Cancel</a>
      </div>
    </form>
  );
}

export function RouteFormPage({ routeId }: { routeId?: string }) {
  const existing = useApi(
    (signal) =>
      routeId === undefined
        ? Promise.resolve(undefined)
        : ok(api.GET('/tollgate/routes/{routeId}', { params: { path: { routeId } }, signal })),
    [routeId],
  );
  return (
    <>
      <PageTitle title={routeId === undefined ? 'Create a route' : `Edit the route ${routeId}`} />
      <ErrorMessage error={existing.error} />
      {routeId === undefined ? (
        <RouteForm />
      ) : (
        existing.data && <RouteForm key={routeId} initial={existing.data} />
      )}
    </>
  );
}
