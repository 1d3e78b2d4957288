/**
 * The verify call of contract section 18, written from the contract until `POST /tollgate/verify` is in
 * the OpenAPI document; then these are its generated request and response types.
 */

/** `ok`, or the error code the proxy would answer the same request with. */
export type VerifyCode =
  | 'ok'
  | 'invalid_api_key'
  | 'key_disabled'
  | 'key_expired'
  | 'rate_limit_exceeded'
  | 'credits_exhausted'
  | 'route_not_allowed'
  | 'too_many_failed_attempts';

export type Period = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';

/** What a request would be, as the proxy would see it. */
export interface VerifyRequest {
  /** The secret the client presented. */
  readonly key: string;
  /** The request path, without the query: usage is filed under it (default `"(verify)"`). */
  readonly path?: string;
  readonly method?: string;
  /** Units to charge, instead of the cost the key's plans give the request. */
  readonly cost?: number;
  /** The customer-id header's value, for usage by customer. */
  readonly customerId?: string;
  /** The end client's address: wrong keys are throttled per address, as the proxy throttles them. */
  readonly clientAddress?: string;
}

/** Where one limit of the key or its consumer stands (the shape of the key detail's `usage.rateLimits.limits`). */
export interface VerifyLimit {
  /** As the RateLimit headers name it: a consumer's limit is `consumer.<name>`. */
  readonly name: string;
  readonly limit: number;
  readonly period: Period;
  readonly remaining: number;
  /** `YYYY-MM-DDThh:mm:ssZ`: the end of a fixed window; for a sliding limit, when its oldest units stop counting. */
  readonly resetTime: string;
  readonly scope: 'key' | 'consumer';
  /**
   * Not in contract 18: without it a limit counts as fixed. It changes only the window a monthly or
   * yearly limit announces in `RateLimit-Policy` (a sliding month is 30 days, a fixed one the calendar's).
   */
  readonly algorithm?: 'fixed' | 'sliding';
}

/** The decision: `valid` when the proxy would forward the request (it is then counted). */
export interface VerifyAnswer {
  readonly valid: boolean;
  readonly code: VerifyCode;
  readonly consumerApiKeyId?: string;
  readonly consumerId?: string | null;
  readonly name?: string;
  readonly externalId?: string | null;
  readonly metadata?: Record<string, unknown>;
  /** Every limit of the key and then of its consumer, in the order of the RateLimit-Policy header. */
  readonly limits: readonly VerifyLimit[];
  /** The balance that applies (contract 14); its shape comes with the OpenAPI document. */
  readonly credits?: unknown;
  /** A refusal's: when a retry can succeed (`null`: credits with no refill). */
  readonly resetTime?: string | null;
  /** A refusal's `Retry-After`. */
  readonly retryAfterSeconds?: number;
}
