import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { ERRORS, errorBody, type ErrorCode } from '../errors.js';
import type { KeyCache, ResolvedKey } from '../keys/key-cache.js';
import type { LimitDecision, RateLimiter } from '../limits/rate-limiter.js';
import type { Plan } from '../limits/plan.js';
import { secondsUntil } from '../limits/window.js';
import type { Metrics } from '../ops/metrics.js';
import type { AllowedAttempt, FailureThrottle } from './auth-throttle.js';
import { credentialOf } from './credential.js';
import { isoSeconds, rateLimitHeader, rateLimitPolicyHeader } from './rate-limit-headers.js';

/** A request that may go to the backend; `limit` is set when a plan applies to its key. */
export interface Admitted {
  readonly admitted: true;
  readonly secret: string;
  readonly key: ResolvedKey;
  readonly limit: { readonly plan: Plan; readonly decision: LimitDecision } | undefined;
}

/** A request answered by Tollgate itself; `key` is set when it carried a valid key (usage counts it). */
export interface Refused {
  readonly admitted: false;
  readonly code: ErrorCode;
  readonly key: ResolvedKey | undefined;
  readonly limit: { readonly plan: Plan; readonly decision: LimitDecision } | undefined;
  /** When a throttled client may try again, epoch ms. */
  readonly retryAtMs?: number;
}

export type Admission = Admitted | Refused;

export interface AdmissionDeps {
  readonly keyCache: KeyCache;
  readonly limiter: RateLimiter;
  readonly metrics: Metrics;
  readonly clock: () => number;
  /** Failed authentications per client address; absent: not throttled. */
  readonly authThrottle?: FailureThrottle;
}

function refused(code: ErrorCode, key?: ResolvedKey, limit?: Refused['limit']): Refused {
  return { admitted: false, code, key, limit };
}

/**
 * Authentication and limiting, the same for plain requests and WebSocket upgrades: credential → key
 * cache → limiter. Only admitted requests consume quota (the limiter refuses without counting).
 * Refusals are counted in the metrics here; admitted requests by whoever forwards them.
 */
export async function admit(deps: AdmissionDeps, headers: IncomingHttpHeaders, client: string): Promise<Admission> {
  const secret = credentialOf(headers);
  const metrics = deps.metrics;
  if (secret === undefined) {
    metrics.authFailures.inc({ reason: 'missing' });
    metrics.proxyRequests.inc({ outcome: 'unauthorized' });
    return refused('missing_api_key');
  }
  // A key fresh in memory is the common case: one look-up, and the throttle is never asked.
  let key = deps.keyCache.fresh(secret);
  if (key === undefined) {
    const found = await lookUp(deps, secret, client);
    if ('admitted' in found) return found;
    key = found;
  }
  // A valid key in the wrong state: refused before the limiter, so no quota is spent; usage counts it.
  const now = deps.clock();
  if (!key.enabled) {
    metrics.authFailures.inc({ reason: 'disabled' });
    metrics.proxyRequests.inc({ outcome: 'unauthorized' });
    return refused('key_disabled', key);
  }
  if (key.expiresAtMs !== null && now >= key.expiresAtMs) {
    metrics.authFailures.inc({ reason: 'expired' });
    metrics.proxyRequests.inc({ outcome: 'unauthorized' });
    return refused('key_expired', key);
  }
  const plan = key.plan;
  if (plan === undefined) return { admitted: true, secret, key, limit: undefined };
  let decision: LimitDecision;
  try {
    const decided = deps.limiter.consume(key.id, plan, now);
    decision = decided instanceof Promise ? await decided : decided;
  } catch {
    metrics.proxyRequests.inc({ outcome: 'unavailable' });
    return refused('limit_unavailable', key);
  }
  if (!decision.allowed) {
    metrics.rateLimited.inc();
    metrics.proxyRequests.inc({ outcome: 'limited' });
    return refused('rate_limit_exceeded', key, { plan, decision });
  }
  return { admitted: true, secret, key, limit: { plan, decision } };
}

/**
 * A secret not fresh in memory. One memory already knows (a stale entry, or a look-up under way)
 * costs nothing to check: it never touches the throttle, and keeps working from a throttled address;
 * a burst carrying one new key is one guess, not hundreds. Any other secret is checked only with the
 * throttle's leave.
 */
async function lookUp(deps: AdmissionDeps, secret: string, client: string): Promise<ResolvedKey | Refused> {
  const metrics = deps.metrics;
  let attempt: AllowedAttempt | undefined;
  if (deps.authThrottle !== undefined && !deps.keyCache.knows(secret)) {
    const asked = deps.authThrottle.attempt(client, deps.clock(), secret);
    const answer = asked instanceof Promise ? await asked : asked;
    if (!answer.allowed) {
      metrics.proxyRequests.inc({ outcome: 'throttled' });
      return { admitted: false, code: 'too_many_failed_attempts', key: undefined, limit: undefined, retryAtMs: answer.retryAtMs };
    }
    attempt = answer;
  }
  let key: ResolvedKey | undefined;
  try {
    const found = deps.keyCache.resolve(secret);
    key = found instanceof Promise ? await found : found;
  } catch {
    attempt?.settle(false);
    metrics.proxyRequests.inc({ outcome: 'unavailable' });
    return refused('auth_unavailable');
  }
  attempt?.settle(key === undefined);
  if (key === undefined) {
    metrics.authFailures.inc({ reason: 'invalid' });
    metrics.proxyRequests.inc({ outcome: 'unauthorized' });
    return refused('invalid_api_key');
  }
  return key;
}

/** `RateLimit-Policy` and `RateLimit` for a response to a limited key. */
export function limitHeaders(limit: NonNullable<Admitted['limit']>, nowMs: number, into: OutgoingHttpHeaders): void {
  into['ratelimit-policy'] = rateLimitPolicyHeader(limit.plan, nowMs);
  into['ratelimit'] = rateLimitHeader(limit.decision, nowMs);
}

export interface RefusalResponse {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: string;
}

/**
 * The answer to a refused request. The 429 body is the contract's `{error, limit, period, remaining: 0,
 * resetTime}` plus the refusing limit's `name`; every other refusal is the JSON error envelope.
 */
export function refusalResponse(refusal: Refused, requestId: string, nowMs: number): RefusalResponse {
  const headers: OutgoingHttpHeaders = { 'x-request-id': requestId };
  let body: string;
  if (refusal.code === 'rate_limit_exceeded' && refusal.limit !== undefined) {
    const { rule, resetMs } = refusal.limit.decision;
    headers['retry-after'] = String(secondsUntil(resetMs, nowMs));
    limitHeaders(refusal.limit, nowMs, headers);
    body = JSON.stringify({
      error: ERRORS.rate_limit_exceeded.message,
      limit: rule.limit,
      period: rule.period,
      remaining: 0,
      resetTime: isoSeconds(resetMs),
      name: rule.name,
    });
  } else {
    if (refusal.retryAtMs !== undefined) headers['retry-after'] = String(secondsUntil(refusal.retryAtMs, nowMs));
    if (refusal.code === 'missing_api_key' || refusal.code === 'invalid_api_key' || refusal.code === 'key_expired') {
      headers['www-authenticate'] = 'Bearer';
    }
    body = JSON.stringify(errorBody(refusal.code));
  }
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = Buffer.byteLength(body);
  return { status: ERRORS[refusal.code].status, headers, body };
}
