/**
 * Every refusal the proxy (and verify) answers a request with, and all that follows from its code, in
 * one table: the answer's status and message, how the proxy's metrics count it, the outcome usage files
 * it under (docs/decisions/0026) and what the failure log keeps (docs/guides/failures.md). `satisfies
 * Record<string, Refusal>` makes a code without every column fail to compile
 * (docs/decisions/0140-one-request-context.md).
 */

/**
 * One refusal's columns. The labels are the metrics' and usage's own words (ProxyOutcome in
 * src/ops/metrics.ts is made of `metric`'s; usage's Outcome must hold every `usageOutcome`, which its
 * readers check): this file sits below both (LAYERS in eslint.config.js), so that ERRORS can list it.
 */
export interface Refusal {
  readonly status: number;
  readonly message: string;
  /** Its `outcome` in `tollgate_proxy_requests_total`. */
  readonly metric: string;
  /** Its `reason` in `tollgate_auth_failures_total`; null: not an authentication failure. */
  readonly authFailure: 'missing' | 'invalid' | 'disabled' | 'expired' | null;
  /** Its outcome in usage; undefined: counted as failed, under no outcome of its own. */
  readonly usageOutcome: string | undefined;
  /** The failure log keeps the limit that refused it (name, period, scope, limit). */
  readonly logsLimit: boolean;
  /** Answered with `WWW-Authenticate: Bearer`: a credential would change the answer. */
  readonly challenges: boolean;
}

export const REFUSALS = {
  invalid_request_target: {
    status: 400,
    message: 'The request target is not allowed (another host, or a dot segment)',
    metric: 'bad_request',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
  invalid_customer_id: {
    status: 400,
    message: 'The customer id holds a control character (U+0000 to U+001F or U+007F)',
    metric: 'bad_request',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
  body_too_large: {
    status: 413,
    message:
      'The request body is larger than BODY_MATCH_MAX_BYTES (decoded, in a content coding), and the plan reads it to match or reserve on it',
    metric: 'bad_request',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
  unsupported_charset: {
    status: 415,
    message:
      'The Content-Type names a charset Tollgate does not read a body in (such as UTF-7; send UTF-8), and the plan reads the body to match or reserve on it',
    metric: 'bad_request',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
  missing_api_key: {
    status: 401,
    message: 'An API key is required (Authorization: Bearer <key> or x-api-key)',
    metric: 'unauthorized',
    authFailure: 'missing',
    usageOutcome: undefined,
    logsLimit: false,
    challenges: true,
  },
  invalid_api_key: {
    status: 401,
    message: 'The API key is not valid',
    metric: 'unauthorized',
    authFailure: 'invalid',
    usageOutcome: undefined,
    logsLimit: false,
    challenges: true,
  },
  key_expired: {
    status: 401,
    message: 'The API key has expired',
    metric: 'unauthorized',
    authFailure: 'expired',
    usageOutcome: 'expired',
    logsLimit: false,
    challenges: true,
  },
  token_expired: {
    status: 401,
    message: 'The token has expired',
    metric: 'unauthorized',
    authFailure: 'expired',
    usageOutcome: 'expired',
    logsLimit: false,
    challenges: true,
  },
  key_disabled: {
    status: 403,
    message: 'The API key is disabled',
    metric: 'unauthorized',
    authFailure: 'disabled',
    usageOutcome: 'disabled',
    logsLimit: false,
    challenges: false,
  },
  route_not_allowed: {
    status: 403,
    message: 'The API key is not allowed on this route',
    metric: 'route_not_allowed',
    authFailure: null,
    usageOutcome: 'routeNotAllowed',
    logsLimit: false,
    challenges: false,
  },
  origin_not_allowed: {
    status: 403,
    message: 'The API key is not allowed from this origin',
    metric: 'origin_not_allowed',
    authFailure: null,
    usageOutcome: 'originNotAllowed',
    logsLimit: false,
    challenges: false,
  },
  address_not_allowed: {
    status: 403,
    message: 'The API key is not allowed from this client address',
    metric: 'address_not_allowed',
    authFailure: null,
    usageOutcome: 'addressNotAllowed',
    logsLimit: false,
    challenges: false,
  },
  route_not_found: {
    status: 404,
    message: 'No route found',
    metric: 'no_route',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
  rate_limit_exceeded: {
    status: 429,
    message: 'Rate limit exceeded',
    metric: 'limited',
    authFailure: null,
    usageOutcome: 'rateLimited',
    logsLimit: true,
    challenges: false,
  },
  concurrency_limit_exceeded: {
    status: 429,
    message: 'Too many requests of this key in flight',
    metric: 'concurrency_limited',
    authFailure: null,
    usageOutcome: 'concurrencyLimited',
    logsLimit: true,
    challenges: false,
  },
  credits_exhausted: {
    status: 429,
    message: 'The credit balance does not hold the cost of this request',
    metric: 'credits_exhausted',
    authFailure: null,
    usageOutcome: 'creditsExhausted',
    logsLimit: false,
    challenges: false,
  },
  too_many_failed_attempts: {
    status: 429,
    message: 'Too many failed authentication attempts',
    metric: 'throttled',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
  limit_unavailable: {
    status: 503,
    message: 'Rate limiting is unavailable',
    metric: 'unavailable',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
  auth_unavailable: {
    status: 503,
    message: 'Key lookup is unavailable',
    metric: 'unavailable',
    authFailure: null,
    usageOutcome: undefined,
    logsLimit: false,
    challenges: false,
  },
} as const satisfies Record<string, Refusal>;

export type RefusalCode = keyof typeof REFUSALS;

/** The `outcome` label of each refusal in `tollgate_proxy_requests_total`. */
export type RefusalMetric = (typeof REFUSALS)[RefusalCode]['metric'];
