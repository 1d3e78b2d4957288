import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { ERRORS, errorBody, type ErrorCode } from '../errors.js';
import type { KeyCache, ResolvedKey } from '../keys/key-cache.js';
import { restrictionRefusal } from '../keys/restrictions.js';
import {
  MAX_TOKEN_LIFETIME_S,
  parseToken,
  signedWith,
  TOKEN_LEEWAY_S,
  TOKEN_PREFIX,
  type TokenClaims,
} from '../keys/token.js';
import { refererOrigin } from '../plans/origins.js';
import {
  limitName,
  PLACE_RETRY_MS,
  refusedForCredits,
  refusedForPlaces,
  type BalanceState,
  type Decision,
  type LimitState,
  type RateLimiter,
} from '../limits/rate-limiter.js';
import { countsVisitors, visitorOf } from '../limits/visitor.js';
import { perOf } from '../plans/plan.js';
import type { RequestFacts } from '../plans/request-match.js';
import type { Subject } from '../plans/subject.js';
import { secondsUntil } from '../plans/window.js';
import { tracer } from '../tracing/tracer.js';
import type { AllowedAttempt, Attempt, FailureThrottle, RefusedAttempt } from './auth-throttle.js';
import { isoSeconds, rateLimitHeader, rateLimitPolicyHeader } from './rate-limit-headers.js';

/** The limit a decision reports (Decision.limit), and the subjects whose limits it covered. */
export interface Limited {
  readonly subjects: readonly Subject[];
  readonly decision: LimitState;
}

/** A request that may go on; `limit` is set when a limit applies to it. */
export interface Admitted {
  readonly admitted: true;
  readonly secret: string;
  readonly key: ResolvedKey;
  readonly limit: Limited | undefined;
  /** The balance with the fewest units left after the charge, when a balance applies. */
  readonly balance: BalanceState | undefined;
  /** Units charged to every limit and balance that applies, and recorded in usage. */
  readonly cost: number;
  /** A token's `sub`: the request's customer id in place of any the client sent. */
  readonly subject?: string;
  /** Gives back its places of concurrency limits (Decision.release): call once it ends; undefined: it holds none. */
  readonly release: (() => void) | undefined;
}

/** A request answered by Tollgate itself; `key` is set when it carried a valid key (usage counts it). */
export interface Refused {
  readonly admitted: false;
  readonly code: ErrorCode;
  readonly key: ResolvedKey | undefined;
  readonly limit: Limited | undefined;
  /** `credits_exhausted`: the balance that does not hold the cost, and the cost. */
  readonly short?: { readonly balance: BalanceState; readonly cost: number };
  /** When a throttled client may try again, epoch ms. */
  readonly retryAtMs?: number;
  /** A valid token's `sub` (see Admitted). */
  readonly subject?: string;
}

export type Admission = Admitted | Refused;

/**
 * What the admission reads of a request: the proxy builds it from the HTTP request, verify from its
 * body (docs/guides/verify-and-client.md), so both decide the same way.
 */
export interface AdmissionRequest {
  /** The credential presented; undefined: none. */
  readonly secret: string | undefined;
  /**
   * The client's address, canonical: where failed attempts are counted, and what a key's
   * `allowedAddresses` hold; undefined: not throttled, and refused by a key restricted to addresses.
   */
  readonly client: string | undefined;
  /** Its `Origin`: the page that sent it; undefined: none. */
  readonly origin: string | undefined;
  /** Its customer id (CUSTOMER_ID_HEADER, verify's `customerId`): whom a limit per customer counts; undefined: none. */
  readonly customerId?: string;
  /** Its `Referer`, whose origin stands for a missing `Origin` (read only for a key restricted to origins). */
  readonly referer?: string;
  /** The route the request takes, null for the catch-all; undefined: none takes it and there is no catch-all. */
  readonly routeId: string | null | undefined;
  readonly method: string;
  /** As sent, without the query. */
  readonly path: string;
  /** Units the request costs instead of its plans' costs (verify's `cost`). */
  readonly cost?: number;
  /** Verify's: every limit's state after the decision is pushed here, as the limiter reports it. */
  readonly states?: LimitState[];
  /** The proxied request itself: when traced, a wait on the limiter is a span of its trace. */
  readonly incoming?: IncomingMessage;
}

export interface AdmissionDeps {
  readonly keyCache: KeyCache;
  readonly limiter: RateLimiter;
  readonly clock: () => number;
  /** Failed authentications per client address; absent: not throttled. */
  readonly authThrottle?: FailureThrottle;
}

function refused(code: ErrorCode, key?: ResolvedKey, limit?: Refused['limit']): Refused {
  return { admitted: false, code, key, limit };
}

/**
 * The one admission decision of the proxy and of verify: credential → key cache → key state → route →
 * limits, in that order. Only an admitted request is charged, its cost to every limit that applies,
 * in one step. Refusals are answered by the caller, which counts them in its metrics.
 */
export async function admit(deps: AdmissionDeps, request: AdmissionRequest): Promise<Admission> {
  const secret = request.secret;
  if (secret === undefined) return refused('missing_api_key');
  // A token is never an entry of the key cache: it goes its own way, from memory when checked before.
  if (secret.startsWith(TOKEN_PREFIX)) {
    const found = checkedToken(deps, secret) ?? (await tokenKey(deps, secret, request.client));
    if ('admitted' in found) return found;
    const { key, claims } = found;
    const admission = await admitToken(deps, request, key, claims);
    return claims.sub === undefined ? admission : { ...admission, subject: claims.sub };
  }
  // A key fresh in memory is the common case: one look-up, and the throttle is never asked.
  const key = deps.keyCache.fresh(secret) ?? (await lookUp(deps, secret, request.client));
  if ('admitted' in key) return key;
  return admitKey(deps, request, secret, key, request.customerId);
}

/**
 * A token's key, narrowed (keys/token.ts): refused once expired (with leeway) or when it claims to
 * live longer than a token may; its origins and routes must allow the request as well as its key's;
 * its `sub` is the customer id; the backend gets the key's own secret.
 */
async function admitToken(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  key: ResolvedKey,
  token: TokenClaims,
): Promise<Admission> {
  const nowS = deps.clock() / 1_000;
  if (token.exp > nowS + MAX_TOKEN_LIFETIME_S + TOKEN_LEEWAY_S) return refused('invalid_api_key');
  if (nowS >= token.exp + TOKEN_LEEWAY_S) return refused('token_expired', key);
  const routeId = request.routeId;
  if (token.routes !== undefined && routeId !== undefined && (routeId === null || !token.routes.has(routeId)))
    return refused('route_not_allowed', key);
  if (token.origins !== undefined) {
    const origin = request.origin ?? refererOrigin(request.referer);
    if (origin === undefined || !token.origins(origin)) return refused('origin_not_allowed', key);
  }
  return admitKey(deps, request, key.signing!.secret, key, token.sub ?? request.customerId);
}

/** The decision for a key found: its state, route and restrictions, then its limits. */
async function admitKey(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  secret: string,
  key: ResolvedKey,
  customerId: string | undefined,
): Promise<Admission> {
  // A valid key in the wrong state, nowhere to go, or not allowed there: refused before the limiter,
  // so nothing is charged; usage counts it.
  const now = deps.clock();
  if (!key.enabled) return refused('key_disabled', key);
  if (key.expiresAtMs !== null && now >= key.expiresAtMs) return refused('key_expired', key);
  const routeId = request.routeId;
  if (routeId === undefined) return refused('route_not_found', key);
  const allowed = key.allowedRouteIds;
  if (allowed !== null && (routeId === null || !allowed.has(routeId)))
    return refused('route_not_allowed', key);
  if (key.restrictions !== undefined) {
    const refusal = restrictionRefusal(key.restrictions, request, request.client);
    if (refusal !== undefined) return refused(refusal, key);
  }
  // The key's limits and its consumer's, decided and charged in one step.
  const pricing = key.pricing;
  const subjects = pricing === undefined ? key.subjects : pricing.subjectsFor(request as RequestFacts);
  const cost = request.cost ?? (pricing === undefined ? 1 : pricing.costOf(request as RequestFacts));
  if (subjects === undefined)
    return { admitted: true, secret, key, limit: undefined, balance: undefined, cost, release: undefined };
  let decision: Decision;
  try {
    // Worked out once, and only for a key or consumer with a limit per visitor.
    const visitor = countsVisitors(subjects) ? visitorOf(request.client, customerId) : undefined;
    const decided = deps.limiter.consume(subjects, cost, now, request.states, visitor);
    // A decision that waits (on Redis) is a span of its own in a traced request.
    if (decided instanceof Promise)
      decision = await (tracer === undefined ? decided : tracer.limiterWait(decided, request.incoming));
    else decision = decided;
  } catch {
    return refused('limit_unavailable', key);
  }
  const limit = decision.limit && { subjects, decision: decision.limit };
  if (refusedForCredits(decision))
    return { ...refused('credits_exhausted', key, limit), short: { balance: decision.balance!, cost } };
  if (refusedForPlaces(decision)) return refused('concurrency_limit_exceeded', key, limit);
  if (!decision.allowed) return refused('rate_limit_exceeded', key, limit);
  return { admitted: true, secret, key, limit, balance: decision.balance, cost, release: decision.release };
}

/**
 * A secret not fresh in memory. One memory already knows (a stale entry, or a look-up under way)
 * costs nothing to check: it never touches the throttle, and keeps working from a throttled address;
 * a burst carrying one new key is one guess, not hundreds. Any other secret is checked only with the
 * throttle's leave, when the request names a client to throttle.
 */
async function lookUp(
  deps: AdmissionDeps,
  secret: string,
  client: string | undefined,
): Promise<ResolvedKey | Refused> {
  if (deps.keyCache.forged(secret)) return forgedRefusal(deps, client);
  let attempt: AllowedAttempt | undefined;
  if (!deps.keyCache.knows(secret)) {
    const asked = await askThrottle(deps, client, secret);
    if (asked !== undefined && !asked.allowed) return throttled(asked);
    attempt = asked;
  }
  let key: ResolvedKey | undefined;
  try {
    const found = deps.keyCache.resolve(secret);
    key = found instanceof Promise ? await found : found;
  } catch {
    attempt?.settle(false);
    return refused('auth_unavailable');
  }
  attempt?.settle(key === undefined);
  return key ?? refused('invalid_api_key');
}

/**
 * A token checked before whose key memory holds fresh, still with the signing key it was found signed
 * with in force: no parsing, no HMAC, no promise. Else undefined (ask `tokenKey`).
 */
function checkedToken(
  deps: AdmissionDeps,
  credential: string,
): { readonly key: ResolvedKey; readonly claims: TokenClaims } | undefined {
  const checked = deps.keyCache.tokens.get(credential);
  if (checked === undefined) return undefined;
  const key = deps.keyCache.freshToken(checked.claims.kid);
  const now = deps.clock();
  const inForce = key?.signing?.keys.some(
    ({ signingKey, untilMs }) => signingKey === checked.signingKey && untilMs > now,
  );
  return inForce === true ? { key: key!, claims: checked.claims } : undefined;
}

/**
 * The key a token names, when the token is well formed and signed with one of its key's signing keys
 * in force. The throttle is asked as for a secret (`lookUp`): only for a key memory does not know.
 */
async function tokenKey(
  deps: AdmissionDeps,
  credential: string,
  client: string | undefined,
): Promise<{ readonly key: ResolvedKey; readonly claims: TokenClaims } | Refused> {
  const claims = parseToken(credential);
  if (claims === undefined) return refused('invalid_api_key');
  let attempt: AllowedAttempt | undefined;
  if (!deps.keyCache.knowsToken(claims.kid)) {
    const asked = await askThrottle(deps, client, credential);
    if (asked !== undefined && !asked.allowed) return throttled(asked);
    attempt = asked;
  }
  let key: ResolvedKey | undefined;
  try {
    const found = deps.keyCache.resolveToken(claims.kid);
    key = found instanceof Promise ? await found : found;
  } catch {
    attempt?.settle(false);
    return refused('auth_unavailable');
  }
  const now = deps.clock();
  const signedBy = key?.signing?.keys.find(
    ({ signingKey, untilMs }) => untilMs > now && signedWith(claims, signingKey),
  );
  if (signedBy !== undefined) {
    attempt?.settle(false);
    deps.keyCache.tokens.add(credential, { claims, signingKey: signedBy.signingKey });
    return { key: key!, claims };
  }
  if (attempt !== undefined) attempt.settle(true);
  else {
    // A wrong signature on a key memory knew is a failed guess all the same: counted after the check,
    // which cost no look-up.
    const asked = await askThrottle(deps, client, credential);
    if (asked !== undefined && !asked.allowed) return throttled(asked);
    asked?.settle(true);
  }
  return refused('invalid_api_key');
}

/** The throttle's leave to check `credential` from `client`; undefined when nothing is throttled. */
async function askThrottle(
  deps: AdmissionDeps,
  client: string | undefined,
  credential: string,
): Promise<Attempt | undefined> {
  if (deps.authThrottle === undefined || client === undefined) return undefined;
  const asked = deps.authThrottle.attempt(client, deps.clock(), credential);
  return asked instanceof Promise ? await asked : asked;
}

/** A wrong checksum (keys/secret-format.ts): a failed guess counted with no store call, or throttled. */
function forgedRefusal(deps: AdmissionDeps, client: string | undefined): Refused {
  const blocked = client === undefined ? undefined : deps.authThrottle?.failedUnchecked(client, deps.clock());
  return blocked === undefined ? refused('invalid_api_key') : throttled(blocked);
}

const throttled = (attempt: RefusedAttempt): Refused => ({
  ...refused('too_many_failed_attempts'),
  retryAtMs: attempt.retryAtMs,
});

/** `RateLimit-Policy` and `RateLimit` for a response to a limited key. */
export function limitHeaders(limit: Limited, nowMs: number, into: OutgoingHttpHeaders): void {
  into['ratelimit-policy'] = rateLimitPolicyHeader(limit.subjects, nowMs);
  into['ratelimit'] = rateLimitHeader(limit.decision, nowMs);
}

export interface RefusalResponse {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: string;
}

/**
 * The answer to a refused request. The 429 body of a limit is the documented `{error, limit, period,
 * remaining: 0, resetTime}` plus the refusing limit's `name`, its `scope` and the `code`; that of a
 * balance `{error, code, remaining, cost, scope, resetTime}` (docs/guides/credits.md); every other refusal is the
 * JSON error envelope.
 */
export function refusalResponse(refusal: Refused, requestId: string, nowMs: number): RefusalResponse {
  const headers: OutgoingHttpHeaders = { 'x-request-id': requestId };
  let body: string;
  if (refusal.code === 'rate_limit_exceeded' && refusal.limit !== undefined) {
    const { scope, rule, resetMs } = refusal.limit.decision;
    headers['retry-after'] = String(secondsUntil(resetMs, nowMs));
    limitHeaders(refusal.limit, nowMs, headers);
    body = JSON.stringify({
      error: ERRORS.rate_limit_exceeded.message,
      code: refusal.code,
      limit: rule.limit,
      period: rule.period,
      remaining: 0,
      resetTime: isoSeconds(resetMs),
      name: limitName(scope, rule),
      scope,
      per: perOf(rule),
    });
  } else if (refusal.code === 'concurrency_limit_exceeded' && refusal.limit !== undefined) {
    const { scope, rule } = refusal.limit.decision;
    headers['retry-after'] = String(PLACE_RETRY_MS / 1000);
    limitHeaders(refusal.limit, nowMs, headers);
    body = JSON.stringify({
      error: ERRORS.concurrency_limit_exceeded.message,
      code: refusal.code,
      limit: rule.limit,
      name: limitName(scope, rule),
      scope,
      per: perOf(rule),
    });
  } else if (refusal.short !== undefined) {
    const { balance, cost } = refusal.short;
    if (balance.refillMs !== null) headers['retry-after'] = String(secondsUntil(balance.refillMs, nowMs));
    body = JSON.stringify({
      error: ERRORS.credits_exhausted.message,
      code: refusal.code,
      remaining: balance.remaining,
      cost,
      scope: balance.scope,
      resetTime: balance.refillMs === null ? null : isoSeconds(balance.refillMs),
    });
  } else {
    if (refusal.retryAtMs !== undefined)
      headers['retry-after'] = String(secondsUntil(refusal.retryAtMs, nowMs));
    if (
      refusal.code === 'missing_api_key' ||
      refusal.code === 'invalid_api_key' ||
      refusal.code === 'key_expired' ||
      refusal.code === 'token_expired'
    ) {
      headers['www-authenticate'] = 'Bearer';
    }
    body = JSON.stringify(errorBody(refusal.code));
  }
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = Buffer.byteLength(body);
  return { status: ERRORS[refusal.code].status, headers, body };
}
