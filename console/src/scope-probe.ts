/**
 * Which sections the signed-in token may read. The API names no token's scopes, so each section's
 * cheapest read is asked once at sign-in: a 403 insufficient_scope names the scope it lacks, and the
 * navigation says so before the administrator clicks.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from './api';

/** Each section's cheapest read (one row at most). */
const PROBES: Readonly<Record<string, string>> = {
  keys: '/consumer-api-key?limit=1',
  consumers: '/tollgate/consumers?limit=1',
  plans: '/rate-limit?limit=1',
  routes: '/tollgate/routes',
  webhooks: '/tollgate/webhooks',
  'billing-exports': '/tollgate/billing-exports',
  audit: '/tollgate/audit-log?limit=1',
  'admin-tokens': '/tollgate/admin-tokens',
};

/** Section → the scope the token lacks to read it; sections it may read are absent. */
export function useMissingScopes(signedIn: boolean): Readonly<Record<string, string>> {
  const [missing, setMissing] = useState<Record<string, string>>({});
  useEffect(() => {
    if (!signedIn) return;
    const controller = new AbortController();
    setMissing({});
    for (const [section, probe] of Object.entries(PROBES)) {
      const [path = '', query = ''] = probe.split('?');
      call<unknown>('GET', path, {
        query: Object.fromEntries(new URLSearchParams(query)),
        signal: controller.signal,
      }).catch((err: unknown) => {
        if (err instanceof ApiError && err.code === 'insufficient_scope' && !controller.signal.aborted)
          setMissing((m) => ({ ...m, [section]: err.scope ?? 'a scope' }));
      });
    }
    return () => controller.abort();
  }, [signedIn]);
  return missing;
}
