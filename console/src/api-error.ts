/** A refused or failed call, carrying the API's own code and message: the console's and the portal's. */
import type { ErrorBody } from './types';

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
