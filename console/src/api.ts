/**
 * Calls to the public management API, exactly as a script would make them: same origin, the signed-in
 * token as a bearer token. Every failure becomes an ApiError carrying the API's own `error` message;
 * a 401 `unauthorized` (the API refused the token itself) also signs the console out.
 */
import { forgetToken, storedToken } from './session';
import type { ErrorBody } from './types';

/** MANAGEMENT_PREFIX: whatever precedes the console's own path. */
export const API_BASE = location.pathname.replace(/\/tollgate\/console(\/.*)?$/, '');

/** Fired on window when the API refused the token: the app shows the sign-in form again. */
export const UNAUTHORIZED_EVENT = 'tollgate:unauthorized';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** insufficient_scope: the scope the call needs (from WWW-Authenticate). */
    readonly scope?: string,
    /** rate_limit_in_use: the keys bound to the plan. */
    readonly keyCount?: number,
    /** validation_failed: each offending field and what is wrong with it. */
    readonly details?: ErrorBody['details'],
    /** too_many_failed_attempts: seconds until a retry can succeed (Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export interface CallOptions {
  readonly query?: Query;
  readonly body?: unknown;
  readonly signal?: AbortSignal;
  readonly token?: string;
}

export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : '?' + text;
}

async function errorOf(res: Response): Promise<ApiError> {
  let body: Partial<ErrorBody> = {};
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    // Not the API's JSON envelope (a proxy in front of Tollgate answered): name the status instead.
  }
  const scope = /scope="([^"]+)"/.exec(res.headers.get('www-authenticate') ?? '')?.[1];
  const retryAfter = Number(res.headers.get('retry-after') ?? NaN);
  return new ApiError(
    res.status,
    body.code ?? 'http_error',
    body.error ?? `The server answered ${res.status} ${res.statusText}`,
    scope,
    body.keyCount,
    body.details,
    Number.isFinite(retryAfter) ? retryAfter : undefined,
  );
}

/** The answer to one call, read by `read` when it succeeded. */
async function send<T>(
  method: string,
  path: string,
  options: CallOptions,
  accept: string,
  read: (res: Response) => Promise<T>,
): Promise<T> {
  const token = options.token ?? storedToken();
  const headers: Record<string, string> = { accept };
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(API_BASE + path + queryString(options.query), {
      method,
      headers,
      body: options.body === undefined ? null : JSON.stringify(options.body),
      signal: options.signal ?? null,
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', `Tollgate could not be reached: ${(err as Error).message}`);
  }
  if (res.ok) return read(res);
  const error = await errorOf(res);
  // Only the API refusing the signed-in token ends the session: another 401 (a proxy in front, a
  // consumer key's refusal) says nothing about it.
  if (error.code === 'unauthorized' && options.token === undefined) {
    forgetToken();
    window.dispatchEvent(new CustomEvent(UNAUTHORIZED_EVENT, { detail: error.message }));
  }
  throw error;
}

export function call<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
  return send(method, path, options, 'application/json', (res) => res.json() as Promise<T>);
}

/** A GET the API also answers as CSV (usage), as a file's contents: the token in a header, never a URL. */
export function callCsv(path: string, options: CallOptions = {}): Promise<Blob> {
  return send('GET', path, options, 'text/csv', (res) => res.blob());
}

/**
 * Path segments are ids the API handed out; encoded all the same. A dot segment would not name an id
 * at all (the browser resolves `/consumer-api-key/..` to `/`, which is the proxy): it never leaves.
 */
export function segment(id: string): string {
  if (id === '' || id === '.' || id === '..')
    throw new ApiError(0, 'invalid_id', `Nothing has the id “${id}”: it cannot be an id.`);
  return encodeURIComponent(id);
}
