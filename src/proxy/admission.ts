import type { ResolvedKey } from '../keys/key-cache.js';
import { subjectsFor } from '../keys/key-subjects.js';
import { restrictionRefusal } from '../keys/restrictions.js';
import {
  MAX_TOKEN_LIFETIME_S,
  parseToken,
  signedWith,
  TOKEN_LEEWAY_S,
  TOKEN_PREFIX,
  type TokenClaims,
} from '../keys/token.js';
import { isCleanCustomerId } from '../plans/customer-id.js';
import { refererOrigin } from '../plans/origins.js';
import { refusedForCredits, refusedForPlaces, type Decision } from '../limits/rate-limiter.js';
import { LimiterUnavailableError } from '../limits/failover-limiter.js';
import { countsVisitors, visitorOf } from '../limits/visitor.js';
import type { RequestFacts } from '../plans/request-match.js';
import { tracer } from '../tracing/tracer.js';
import type { AllowedAttempt, Attempt } from './auth-throttle.js';
import { SETTLE_MAX_DEFAULT } from '../plans/usage-pricing.js';
import { reservedCost } from './settlement.js';
import type { AdmissionDeps, AdmissionRequest } from './admission-request.js';
import { decidedBody, type DecidedBody } from './decided-body.js';
import { ClientGoneError } from './client-gone-error.js';
import { refused, type Admission, type Refused } from './admission-result.js';

export type { AdmissionDeps, AdmissionRequest } from './admission-request.js';
export type { Admission, Admitted, Limited, Refused } from './admission-result.js';

/**
 * The one admission decision of the proxy and of verify: credential → key cache → key state → route →
 * limits, in that order. Only an admitted request is charged, its cost to every limit that applies,
 * in one step. Refusals are answered by the caller, which counts them in its metrics. A refusal that
 * needs nothing but memory (no credential, a wrong checksum) is answered without a promise: a flood of
 * them costs no more than a preflight (docs/performance.md).
 */
export function admit(deps: AdmissionDeps, request: AdmissionRequest): Admission | Promise<Admission> {
  const secret = request.secret;
  if (secret === undefined) return refused('missing_api_key');
  // A token is never an entry of the key cache: it goes its own way, from memory when checked before.
  if (secret.startsWith(TOKEN_PREFIX)) return admitByToken(deps, request, secret);
  // A key fresh in memory is the common case: one look-up, and the throttle is never asked.
  const key = deps.keyCache.fresh(secret);
  if (key !== undefined) return admitKey(deps, request, secret, key, request.customerId);
  if (!deps.keyCache.knows(secret)) {
    // An address out of guesses is refused whatever secret memory does not know (as `lookUp` would):
    // told first, so that a flood from it costs no checksum.
    const blockedUntil = blockedAt(deps, request.client);
    if (blockedUntil !== undefined) return throttled(blockedUntil);
    // Only a secret memory does not hold can be forged: a known key's requests skip the checksum.
    if (deps.keyCache.forged(secret)) return forgedRefusal(deps, request.client);
  }
  return admitLookedUp(deps, request, secret);
}

/** From memory alone: the end of the window in which the client is refused, or undefined. */
function blockedAt(deps: AdmissionDeps, client: string | undefined): number | undefined {
  if (deps.authThrottle === undefined || client === undefined) return undefined;
  return deps.authThrottle.blockedUntil(client, deps.clock());
}

async function admitByToken(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  secret: string,
): Promise<Admission> {
  const found = checkedToken(deps, secret) ?? (await tokenKey(deps, secret, request));
  if ('admitted' in found) return found;
  const { key, claims } = found;
  const admission = await admitToken(deps, request, key, claims);
  return claims.sub === undefined ? admission : { ...admission, subject: claims.sub };
}

async function admitLookedUp(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  secret: string,
): Promise<Admission> {
  const key = await lookUp(deps, secret, request);
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

/**
 * The decision for a key found: its state, route and restrictions, then its limits. Answered without a
 * promise when nothing waits (no body to read, a limiter that decides from memory): the request is on
 * its way to the backend before Node has finished with its arrival.
 */
function admitKey(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  secret: string,
  key: ResolvedKey,
  customerId: string | undefined,
): Admission | Promise<Admission> {
  // A customer id that could not reach a header or storage intact: refused before anything is charged.
  if (customerId !== undefined && !isCleanCustomerId(customerId)) return refused('invalid_customer_id', key);
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
  const payer = { secret, key, customerId, now };
  const facts = request as RequestFacts;
  // Read only when the body may decide (a body match, a reservation from it).
  const maxBytes = deps.bodyMatchMaxBytes;
  const body =
    maxBytes !== undefined && key.pricing?.readsBody(facts) ? decidedBody(request, maxBytes) : undefined;
  if (body === undefined) return charge(deps, request, payer, facts, undefined);
  return body instanceof Promise
    ? body.then((read) => chargeOnBody(deps, request, payer, facts, read))
    : chargeOnBody(deps, request, payer, facts, body);
}

/** Who is charged, and when: the secret presented, its key, the customer id counted. */
interface Payer {
  readonly secret: string;
  readonly key: ResolvedKey;
  readonly customerId: string | undefined;
  readonly now: number;
}

/**
 * `charge`, deciding on the request's body: 413 when it was too large, 415 in a charset its backend
 * may read otherwise; a client gone before it was read is charged nothing, and rejects with whom
 * usage counts it for (a ClientGoneError).
 */
function chargeOnBody(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  payer: Payer,
  facts: RequestFacts,
  body: DecidedBody,
): Admission | Promise<Admission> {
  if (body === 'too-large') return refused('body_too_large', payer.key);
  if (body === 'other-charset') return refused('unsupported_charset', payer.key);
  if (body === 'client-gone') throw new ClientGoneError(payer.key, payer.customerId);
  const withBody = { routeId: facts.routeId, method: facts.method, path: facts.path, body: body.json };
  return charge(deps, request, payer, withBody, body.forwarded);
}

/** The key's limits and its consumer's, decided and charged in one step. */
function charge(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  { secret, key, customerId, now }: Payer,
  facts: RequestFacts,
  /** Its body, read to decide on it: forwarded as it is. */
  body: Buffer | undefined,
): Admission | Promise<Admission> {
  const pricing = key.pricing;
  const subjects = subjectsFor(key, facts);
  const rule = request.cost === undefined ? pricing?.costRuleOf(facts) : undefined;
  const settleMax = rule?.settleMax ?? SETTLE_MAX_DEFAULT;
  const cost = request.cost ?? reservedCost(rule, facts.body, settleMax, request.reserve);
  const settles = rule?.settle;
  const settling = settles !== undefined || request.reserve !== undefined;
  if (subjects === undefined)
    return {
      admitted: true,
      secret,
      key,
      limit: undefined,
      balance: undefined,
      cost,
      release: undefined,
      ...(settling && {
        settlement: { rule: settles, settleMax, reserved: cost, reservation: undefined },
      }),
      ...(body !== undefined && { body }),
    };
  // Worked out once, and only for a key or consumer with a limit per visitor.
  const visitor = countsVisitors(subjects) ? visitorOf(request.client, customerId) : undefined;
  const charged = (decision: Decision): Admission => {
    request.states?.push(...decision.states);
    const limit = decision.limit && { subjects, decision: decision.limit };
    if (refusedForCredits(decision))
      return { ...refused('credits_exhausted', key, limit), short: { balance: decision.balance!, cost } };
    if (refusedForPlaces(decision)) return refused('concurrency_limit_exceeded', key, limit);
    if (!decision.allowed) return refused('rate_limit_exceeded', key, limit);
    // One literal, no spreads: this runs for every admitted request, before it is forwarded.
    return {
      admitted: true,
      secret,
      key,
      limit,
      balance: decision.balance,
      cost,
      release: decision.release,
      body,
      settlement: settling
        ? {
            rule: settles,
            settleMax,
            reserved: cost,
            reservation: { decision, subjects, visitor, reserved: cost, admittedMs: now },
          }
        : undefined,
    };
  };
  let decided: Decision | Promise<Decision>;
  try {
    decided = deps.limiter.consume(subjects, cost, now, visitor);
  } catch (err) {
    return limiterFailed(deps, request, key, err);
  }
  if (!(decided instanceof Promise)) return charged(decided);
  // A decision that waits (on Redis) is a span of its own in a traced request.
  const waited = tracer === undefined ? decided : tracer.limiterWait(decided, request.incoming);
  return waited.then(charged, (err: unknown) => limiterFailed(deps, request, key, err));
}

/**
 * Redis down or a bug alike: the client gets 503. An outage is logged once by the failover limiter as
 * it starts and ends, not once per request; anything else is the operator's to see.
 */
function limiterFailed(
  deps: AdmissionDeps,
  request: AdmissionRequest,
  key: ResolvedKey,
  err: unknown,
): Refused {
  if (!(err instanceof LimiterUnavailableError))
    deps.logger.error({ err, reqId: request.requestId, keyId: key.id }, 'rate limit decision failed');
  return refused('limit_unavailable', key);
}

/**
 * A secret not fresh in memory, and not forged. One memory already knows (a stale entry, or a look-up
 * under way) costs nothing to check: it never touches the throttle, and keeps working from a throttled
 * address; a burst carrying one new key is one guess, not hundreds. Any other secret is checked only
 * with the throttle's leave, when the request names a client to throttle.
 */
async function lookUp(
  deps: AdmissionDeps,
  secret: string,
  request: AdmissionRequest,
): Promise<ResolvedKey | Refused> {
  let attempt: AllowedAttempt | undefined;
  if (!deps.keyCache.knows(secret)) {
    const asked = await askThrottle(deps, request.client, secret);
    if (asked !== undefined && !asked.allowed) return throttled(asked.retryAtMs);
    attempt = asked;
  }
  let key: ResolvedKey | undefined;
  try {
    const found = deps.keyCache.resolve(secret);
    key = found instanceof Promise ? await found : found;
  } catch (err) {
    attempt?.settle(false);
    return keyStoreFailed(deps, request, err);
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
  request: AdmissionRequest,
): Promise<{ readonly key: ResolvedKey; readonly claims: TokenClaims } | Refused> {
  const claims = parseToken(credential);
  if (claims === undefined) return refused('invalid_api_key');
  let attempt: AllowedAttempt | undefined;
  if (!deps.keyCache.knowsToken(claims.kid)) {
    const asked = await askThrottle(deps, request.client, credential);
    if (asked !== undefined && !asked.allowed) return throttled(asked.retryAtMs);
    attempt = asked;
  }
  let key: ResolvedKey | undefined;
  try {
    const found = deps.keyCache.resolveToken(claims.kid);
    key = found instanceof Promise ? await found : found;
  } catch (err) {
    attempt?.settle(false);
    return keyStoreFailed(deps, request, err);
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
    const asked = await askThrottle(deps, request.client, credential);
    if (asked !== undefined && !asked.allowed) return throttled(asked.retryAtMs);
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

/** A key look-up that failed (the database down, or a bug): logged with its cause, answered 503. */
function keyStoreFailed(deps: AdmissionDeps, request: AdmissionRequest, err: unknown): Refused {
  deps.logger.error({ err, reqId: request.requestId }, 'key look-up failed');
  return refused('auth_unavailable');
}

/** A wrong checksum (keys/secret-format.ts): a failed guess counted with no store call, or throttled. */
function forgedRefusal(deps: AdmissionDeps, client: string | undefined): Refused {
  const blocked = client === undefined ? undefined : deps.authThrottle?.failedUnchecked(client, deps.clock());
  return blocked === undefined ? refused('invalid_api_key') : throttled(blocked.retryAtMs);
}

const throttled = (retryAtMs: number): Refused => ({ ...refused('too_many_failed_attempts'), retryAtMs });
