import type { ServerResponse } from 'node:http';
import { REFUSALS, type RefusalCode } from './refusals.js';

/** The errors of the management API, the portal and the ops listener (the proxy's are REFUSALS). */
const SERVICE_ERRORS = {
  unauthorized: { status: 401, message: 'A valid root token is required' },
  insufficient_scope: { status: 403, message: 'The token does not hold the scope this call needs' },
  token_outlives_caller: {
    status: 403,
    message: 'A token can create only tokens that expire no later than itself',
  },
  validation_failed: { status: 400, message: 'The request is not valid' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON' },
  invalid_cursor: { status: 400, message: 'The cursor is not valid' },
  range_beyond_retention: {
    status: 400,
    message: 'The range reaches back beyond what is retained at this granularity',
  },
  range_too_large: { status: 400, message: 'The range holds more than 1,500 buckets at this granularity' },
  key_not_found: { status: 404, message: 'No consumer API key has that id' },
  rate_limit_not_found: { status: 404, message: 'No rate limit plan has that id' },
  consumer_not_found: { status: 404, message: 'No consumer has that id' },
  admin_token_not_found: { status: 404, message: 'No admin token has that id' },
  billing_export_not_found: { status: 404, message: 'No billing export has that id' },
  webhook_not_found: { status: 404, message: 'No webhook has that id' },
  delivery_not_found: { status: 404, message: 'The webhook has no delivery with that id' },
  session_not_found: { status: 404, message: 'No active portal session has that id' },
  reservation_not_found: {
    status: 404,
    message:
      'No reservation to settle has that id: unknown, settled already, or past RESERVATION_TTL_SECONDS',
  },
  not_found: { status: 404, message: 'No such route' },
  not_signed_in: {
    status: 401,
    message: 'Sign in to the portal first (the session cookie is missing or ended)',
  },
  cross_site_request: {
    status: 403,
    message: 'A portal change must come from the portal page itself (its Origin and its CSRF token)',
  },
  key_limit_reached: {
    status: 409,
    message: 'The consumer holds as many keys as the portal allows (maxKeysPerConsumer)',
  },
  key_not_usable: {
    status: 409,
    message: 'The key is disabled or expired: a token of it would be refused',
  },
  disabled_by_administrator: {
    status: 403,
    message: 'An administrator disabled the key: only an administrator can enable it',
  },
  portal_disabled: {
    status: 409,
    message: 'The developer portal is off (PATCH /tollgate/portal/settings enabled=true)',
  },
  sign_in_link_invalid: {
    status: 400,
    message: 'The sign-in link is not valid: used already, expired, or ended; ask for a new one',
  },
  method_not_allowed: { status: 405, message: 'Method not allowed on this route' },
  rate_limit_exists: { status: 409, message: 'A rate limit plan with that id already exists' },
  rate_limit_in_use: {
    status: 409,
    message: 'The rate limit plan is bound to keys or consumers; unbind them or delete with force=true',
  },
  consumer_exists: { status: 409, message: 'Another consumer has that externalId' },
  consumer_has_keys: {
    status: 409,
    message: 'The consumer holds keys; detach them or delete with force=true',
  },
  route_exists: {
    status: 409,
    message: 'A route with that id, or with the same host and path prefix and a method in common, exists',
  },
  billing_export_busy: {
    status: 409,
    message: 'Another replica is running this billing export; retry shortly',
    retryAfterSeconds: 5,
  },
  webhook_disabled: {
    status: 409,
    message: 'The webhook is disabled; enable it first (PATCH {"enabled": true})',
  },
  payload_too_large: { status: 413, message: 'The request body is larger than 64 KiB' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json' },
  internal_error: { status: 500, message: 'Internal error' },
  bad_gateway: { status: 502, message: 'The backend could not be reached' },
  database_unavailable: { status: 503, message: 'The database is unavailable' },
  storage_unavailable: {
    status: 503,
    message: 'The database does not accept writes right now; retry later',
    retryAfterSeconds: 5,
  },
  gateway_timeout: { status: 504, message: 'The backend did not answer in time' },
} as const satisfies Record<string, ErrorEntry>;

interface ErrorEntry {
  readonly status: number;
  readonly message: string;
  readonly retryAfterSeconds?: number;
}

/** Every error the service answers with, by stable code: the proxy's refusals from their one table. */
export const ERRORS: typeof SERVICE_ERRORS & Readonly<Record<RefusalCode, ErrorEntry>> = {
  ...SERVICE_ERRORS,
  ...REFUSALS,
};

/** Seconds a client should wait before retrying a refusal with this code, when the catalogue says. */
export function retryAfterOf(code: ErrorCode): number | undefined {
  const entry = ERRORS[code];
  return 'retryAfterSeconds' in entry ? entry.retryAfterSeconds : undefined;
}

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: unknown[];
  /** rate_limit_in_use: how many keys hold the plan; consumer_has_keys: how many keys the consumer holds. */
  keyCount?: number;
  /** rate_limit_in_use: how many consumers hold the plan. */
  consumerCount?: number;
}

/** The one JSON error envelope, `{error, code, details?}`, for every listener and path. */
export function errorBody(
  code: ErrorCode,
  message: string = ERRORS[code].message,
  details?: unknown[],
): ErrorBody {
  return details ? { error: message, code, details } : { error: message, code };
}

/** The envelope as response text with its headers, for the paths that write raw HTTP (proxy, upgrades, ops). */
export function errorResponse(
  code: ErrorCode,
  extraHeaders?: Record<string, string | number>,
): { status: number; headers: Record<string, string | number>; body: string } {
  const body = JSON.stringify(errorBody(code));
  const retryAfter = retryAfterOf(code);
  return {
    status: ERRORS[code].status,
    headers: {
      ...extraHeaders,
      ...(retryAfter !== undefined && { 'retry-after': retryAfter }),
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    },
    body,
  };
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string = ERRORS[code].message,
    readonly details?: unknown[],
    /** Facts the body carries besides the envelope (the `keyCount` of rate_limit_in_use). */
    readonly facts?: Pick<ErrorBody, 'keyCount' | 'consumerCount'>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERRORS[code].status;
  }

  toBody(): ErrorBody {
    return { ...errorBody(this.code, this.message, this.details), ...this.facts };
  }
}

/** Answers a node:http response with the envelope (the raw paths that don't run Express). */
export function sendError(
  res: ServerResponse,
  code: ErrorCode,
  extraHeaders?: Record<string, string | number>,
): void {
  const { status, headers, body } = errorResponse(code, extraHeaders);
  res.writeHead(status, headers);
  res.end(body);
}
