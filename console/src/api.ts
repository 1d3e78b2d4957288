/**
 * Calls to the public management API, exactly as a script would make them: same origin, the signed-in
 * token as a bearer token. Paths, parameters, bodies and answers are typed from the OpenAPI document
 * (generated/management-api.ts, made by `npm run build` from the operations' one definition), so a
 * parameter added to an operation is typed here at the next build. `ok` turns every failure into an
 * ApiError carrying the API's own `error` message; a 401 `unauthorized` (the API refused the signed-in
 * token itself) also signs the console out.
 */
import createClient from 'openapi-fetch';
import type { paths } from './generated/management-api';
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

/** `?a=1&b=x`, leaving out what is not set (an empty filter field filters nothing). */
export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : '?' + text;
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

/**
 * The management API, typed by path: `api.GET('/consumer-api-key/{consumerApiKeyId}', { params })`.
 * Answers are typed as JSON; the CSV a usage call also serves is read as a Blob (`AS_CSV`).
 */
export const api = createClient<paths, 'application/json'>({
  baseUrl: API_BASE,
  credentials: 'omit',
  cache: 'no-store',
  querySerializer: (query) => queryString(query as Query).slice(1),
  pathSerializer: (path, params) =>
    path.replace(/\{([^{}]+)\}/g, (_all, name: string) => segment(String(params[name] ?? ''))),
});

// The signed-in token, unless the call names another (a token being tried at sign-in).
api.use({
  onRequest({ request }) {
    const token = storedToken();
    if (token && !request.headers.has('authorization'))
      request.headers.set('authorization', `Bearer ${token}`);
    if (!request.headers.has('accept')) request.headers.set('accept', 'application/json');
    return request;
  },
});

function errorOf(response: Response, body: unknown): ApiError {
  const envelope = (typeof body === 'object' && body !== null ? body : {}) as Partial<ErrorBody>;
  const scope = /scope="([^"]+)"/.exec(response.headers.get('www-authenticate') ?? '')?.[1];
  const retryAfter = Number(response.headers.get('retry-after') ?? NaN);
  return new ApiError(
    response.status,
    // Not the API's JSON envelope (a proxy in front of Tollgate answered): name the status instead.
    envelope.code ?? 'http_error',
    envelope.error ?? `The server answered ${response.status} ${response.statusText}`,
    scope,
    envelope.keyCount,
    envelope.details,
    Number.isFinite(retryAfter) ? retryAfter : undefined,
  );
}

/** What one call of `api` resolves to. */
interface Answer {
  readonly data?: unknown;
  readonly error?: unknown;
  readonly response: Response;
}

/**
 * The answer's data, or its failure as an ApiError. `session: false`: the call was made with a token
 * being tried (`bearer`), not the signed-in one, whose refusal says nothing about the session.
 */
export async function ok<A extends Answer>(
  pending: Promise<A>,
  options: { session?: boolean } = {},
): Promise<Exclude<A['data'], undefined>> {
  let answer: A;
  try {
    answer = await pending;
  } catch (err) {
    if (err instanceof ApiError || (err instanceof DOMException && err.name === 'AbortError')) throw err;
    throw new ApiError(0, 'network_error', `Tollgate could not be reached: ${(err as Error).message}`);
  }
  if (answer.response.ok) return answer.data as Exclude<A['data'], undefined>;
  const error = errorOf(answer.response, answer.error);
  // Only the API refusing the signed-in token ends the session: another 401 (a proxy in front, a
  // consumer key's refusal) says nothing about it.
  if (error.code === 'unauthorized' && options.session !== false) {
    forgetToken();
    window.dispatchEvent(new CustomEvent(UNAUTHORIZED_EVENT, { detail: error.message }));
  }
  throw error;
}

/** The bearer header of a token being tried, for `api` calls that must not use the signed-in one. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
