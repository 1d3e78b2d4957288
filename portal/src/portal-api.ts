/**
 * The portal's own API (`{prefix}/tollgate/portal/api/…`, src/portal/README.md), called with the
 * session cookie, never a bearer token. Every write carries the CSRF token the session answered (held
 * in this module's memory, never in storage or a URL); the browser adds the Origin the API checks. A
 * 401 means the session ended (signed out elsewhere, expired, ended by an administrator): the app
 * shows the sign-in page.
 */
import { ApiError } from '../../console/src/api-error';
import { queryString, type Query } from '../../console/src/query-string';

export { segment } from '../../console/src/query-string';
import type { ErrorBody } from '../../console/src/types';

/** `{prefix}/tollgate/portal`: whatever the page's own path is below it. */
export const PORTAL_ROOT = location.pathname.replace(/\/(reference)?$/, '');
const API = PORTAL_ROOT + '/api';

/** Fired on window when the API no longer knows the session. */
export const SIGNED_OUT_EVENT = 'tollgate:portal-signed-out';

const CSRF_HEADER = 'x-tollgate-csrf';
let csrfToken: string | undefined;

/** Remembers (in memory) the proof writes carry; `undefined` on sign-out. */
export function holdCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

interface CallOptions {
  readonly query?: Query;
  readonly body?: unknown;
  readonly signal?: AbortSignal;
}

async function send(method: string, path: string, options: CallOptions, accept: string): Promise<Response> {
  const headers: Record<string, string> = { accept };
  if (method !== 'GET') {
    if (csrfToken) headers[CSRF_HEADER] = csrfToken;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
  }
  let response: Response;
  try {
    response = await fetch(API + path + queryString(options.query), {
      method,
      headers,
      credentials: 'same-origin',
      cache: 'no-store',
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
      ...(options.signal && { signal: options.signal }),
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', `The portal could not be reached: ${(err as Error).message}`);
  }
  if (response.ok) return response;
  const body = (await response.json().catch(() => ({}))) as Partial<ErrorBody>;
  const error = new ApiError(
    response.status,
    body.code ?? 'http_error',
    body.error ?? `The server answered ${response.status} ${response.statusText}`,
    undefined,
    undefined,
    body.details,
  );
  // Only a session the page held can end: a visitor never signed in is simply not signed in.
  if (response.status === 401 && csrfToken !== undefined) {
    csrfToken = undefined;
    window.dispatchEvent(new CustomEvent(SIGNED_OUT_EVENT, { detail: error.message }));
  }
  throw error;
}

/** A JSON call: its answer's body. */
export async function call<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
  const response = await send(method, path, options, 'application/json');
  return (await response.json()) as T;
}

/** A usage call's CSV, read as a blob for the browser to save. */
export async function csv(path: string, query: Query): Promise<Blob> {
  return (await send('GET', path, { query }, 'text/csv')).blob();
}
