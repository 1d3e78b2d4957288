import type { ServerResponse } from 'node:http';

/** Every error the service answers with, by stable code. */
export const ERRORS = {
  unauthorized: { status: 401, message: 'A valid root token is required' },
  missing_api_key: { status: 401, message: 'An API key is required (Authorization: Bearer <key> or x-api-key)' },
  invalid_api_key: { status: 401, message: 'The API key is not valid' },
  validation_failed: { status: 400, message: 'The request is not valid' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON' },
  invalid_cursor: { status: 400, message: 'The cursor is not valid' },
  invalid_request_target: { status: 400, message: 'The request target is not allowed (another host, or a dot segment)' },
  key_not_found: { status: 404, message: 'No consumer API key has that id' },
  rate_limit_not_found: { status: 404, message: 'No rate limit plan has that id' },
  not_found: { status: 404, message: 'No such management route' },
  method_not_allowed: { status: 405, message: 'Method not allowed on this route' },
  rate_limit_exists: { status: 409, message: 'A rate limit plan with that id already exists' },
  payload_too_large: { status: 413, message: 'The request body is larger than 64 KiB' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json' },
  rate_limit_exceeded: { status: 429, message: 'Rate limit exceeded' },
  too_many_failed_attempts: { status: 429, message: 'Too many failed authentication attempts' },
  internal_error: { status: 500, message: 'Internal error' },
  bad_gateway: { status: 502, message: 'The backend could not be reached' },
  limit_unavailable: { status: 503, message: 'Rate limiting is unavailable' },
  auth_unavailable: { status: 503, message: 'Key lookup is unavailable' },
  database_unavailable: { status: 503, message: 'The database is unavailable' },
  gateway_timeout: { status: 504, message: 'The backend did not answer in time' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: unknown[];
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string = ERRORS[code].message,
    readonly details?: unknown[],
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERRORS[code].status;
  }

  toBody(): ErrorBody {
    return this.details ? { error: this.message, code: this.code, details: this.details } : { error: this.message, code: this.code };
  }
}

/** The one JSON error envelope, for the raw node:http paths (proxy, ops) that don't run Express. */
export function sendError(
  res: ServerResponse,
  code: ErrorCode,
  extraHeaders?: Record<string, string | number>,
  message: string = ERRORS[code].message,
): void {
  const body = JSON.stringify({ error: message, code });
  res.writeHead(ERRORS[code].status, {
    ...extraHeaders,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
