/**
 * How the proxy answers, from a verify answer: the status, headers and body of a refusal (the proxy's answers
 * in the OpenAPI document and docs/guides/plans.md, consumers.md, credits.md and routes.md), and the
 * RateLimit headers of an admitted request. The one place the middleware knows them. Mirrors
 * src/proxy/admission.ts (refusalResponse) and src/proxy/rate-limit-headers.ts;
 * tests/e2e/client-middleware.test.ts holds both to the same bytes.
 */
import { PROXY_REFUSALS, type ProxyRefusalCode } from './generated/proxy-refusals.js';
import type { Period, VerifyAnswer, VerifyLimit } from './verify-types.js';

export interface ProxyResponse {
  readonly status: number;
  /** Lower-case names, in the order the proxy writes them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The refusals that challenge the client for a (better) key. */
const CHALLENGED: ReadonlySet<ProxyRefusalCode> = new Set([
  'missing_api_key',
  'invalid_api_key',
  'key_expired',
  'token_expired',
]);

/** A request without any credential: the proxy refuses it without looking anything up. */
export function missingKeyResponse(): ProxyResponse {
  return envelope('missing_api_key', undefined);
}

/**
 * A customer id holding a control character: the proxy refuses it (and verify takes none), so the
 * middleware answers as the proxy does without asking verify.
 */
export function invalidCustomerIdResponse(): ProxyResponse {
  return envelope('invalid_customer_id', undefined);
}

/** The proxy's answer to the request verify refused. */
export function refusalOf(answer: VerifyAnswer): ProxyResponse {
  const code = answer.code;
  if (code === 'rate_limit_exceeded') return rateLimited(answer);
  if (code === 'concurrency_limit_exceeded') return concurrencyLimited(answer);
  if (code === 'credits_exhausted') return creditsExhausted(answer);
  if (code === 'ok' || !(code in PROXY_REFUSALS)) {
    throw new Error(
      `@tollgate/client cannot answer verify's "${code}" as the proxy does; update @tollgate/client`,
    );
  }
  return envelope(code as ProxyRefusalCode, answer.retryAfterSeconds);
}

/** `{error, code}` with its status; `Retry-After` when the client must wait. */
function envelope(code: ProxyRefusalCode, retryAfterSeconds: number | undefined): ProxyResponse {
  const { status, message } = PROXY_REFUSALS[code];
  const headers: Record<string, string> = {};
  if (retryAfterSeconds !== undefined) headers['retry-after'] = String(retryAfterSeconds);
  if (CHALLENGED.has(code)) headers['www-authenticate'] = 'Bearer';
  return withBody(status, headers, JSON.stringify({ error: message, code }));
}

/**
 * 429 over a limit: the body and `Retry-After` name the refusing limit whose window ends last, and
 * `RateLimit` reports that limit.
 */
function rateLimited(answer: VerifyAnswer): ProxyResponse {
  const refusing = refusingLimit(answer);
  const retryAfter = answer.retryAfterSeconds;
  if (retryAfter === undefined)
    throw new TypeError('verify answered rate_limit_exceeded without retryAfterSeconds');
  const headers: Record<string, string> = {
    'retry-after': String(retryAfter),
    'ratelimit-policy': rateLimitPolicy(answer.limits),
    ratelimit: `"${refusing.name}";r=${refusing.remaining};t=${retryAfter}`,
  };
  const body = JSON.stringify({
    error: PROXY_REFUSALS.rate_limit_exceeded.message,
    code: 'rate_limit_exceeded',
    limit: refusing.limit,
    period: refusing.period,
    remaining: 0,
    resetTime: answer.resetTime,
    name: refusing.name,
    scope: refusing.scope,
    per: refusing.per,
  });
  return withBody(PROXY_REFUSALS.rate_limit_exceeded.status, headers, body);
}

/**
 * 429 over a concurrency limit: the body names the full one (of the key before its consumer's),
 * `Retry-After: 1`.
 */
function concurrencyLimited(answer: VerifyAnswer): ProxyResponse {
  const refusing = answer.limits.find((l) => l.algorithm === 'concurrency' && l.remaining === 0);
  if (refusing === undefined)
    throw new TypeError('verify answered concurrency_limit_exceeded without a full concurrency limit');
  const headers: Record<string, string> = {
    'retry-after': '1',
    'ratelimit-policy': rateLimitPolicy(answer.limits),
    ratelimit: `"${refusing.name}";r=0;t=1`,
  };
  const body = JSON.stringify({
    error: PROXY_REFUSALS.concurrency_limit_exceeded.message,
    code: 'concurrency_limit_exceeded',
    limit: refusing.limit,
    name: refusing.name,
    scope: refusing.scope,
    per: refusing.per,
  });
  return withBody(PROXY_REFUSALS.concurrency_limit_exceeded.status, headers, body);
}

/**
 * 429 for want of credits: the body names the balance that does not hold the cost, and `Retry-After`
 * its next refill, when it has one.
 */
function creditsExhausted(answer: VerifyAnswer): ProxyResponse {
  const { credits, cost } = answer;
  if (credits === undefined || cost === undefined)
    throw new TypeError('verify answered credits_exhausted without credits and cost');
  const headers: Record<string, string> = {};
  if (answer.retryAfterSeconds !== undefined) headers['retry-after'] = String(answer.retryAfterSeconds);
  const body = JSON.stringify({
    error: PROXY_REFUSALS.credits_exhausted.message,
    code: 'credits_exhausted',
    remaining: credits.remaining,
    cost,
    scope: credits.scope,
    resetTime: credits.resetTime,
  });
  return withBody(PROXY_REFUSALS.credits_exhausted.status, headers, body);
}

/**
 * The limit the proxy names in a 429: the answer's `resetTime` is the refusing limit's; of the limits
 * whose window ends then, one that refused has fewer units left than any that had room for the cost.
 * A token bucket's `resetTime` in `limits` is when it holds one unit, its refusal's when it holds the
 * cost: without a limit ending then, the token bucket with the fewest units left refused.
 */
function refusingLimit(answer: VerifyAnswer): VerifyLimit {
  let refusing: VerifyLimit | undefined;
  for (const limit of answer.limits) {
    if (
      limit.resetTime === answer.resetTime &&
      (refusing === undefined || limit.remaining < refusing.remaining)
    )
      refusing = limit;
  }
  if (refusing === undefined)
    for (const limit of answer.limits)
      if (
        limit.algorithm === 'tokenBucket' &&
        (refusing === undefined || limit.remaining < refusing.remaining)
      )
        refusing = limit;
  if (refusing === undefined)
    throw new TypeError('verify answered rate_limit_exceeded without a limit ending at its resetTime');
  return refusing;
}

function withBody(status: number, headers: Record<string, string>, body: string): ProxyResponse {
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = String(Buffer.byteLength(body));
  return { status, headers, body };
}

/**
 * `RateLimit-Policy` and `RateLimit` for an admitted request, as the proxy adds them to the backend's
 * answer; none when no limit applies. `RateLimit` reports the limit with the fewest units left (of
 * those, the one whose window ends last).
 */
export function admittedHeaders(answer: VerifyAnswer, nowMs: number): Record<string, string> {
  const limits = answer.limits;
  if (limits.length === 0) return {};
  // A concurrency limit has no resetTime: the proxy counts a second on (a place frees any time).
  const resetOf = (limit: VerifyLimit) =>
    limit.resetTime === null ? nowMs + 1_000 : Date.parse(limit.resetTime);
  let tightest = limits[0]!;
  for (const limit of limits.slice(1)) {
    if (
      limit.remaining < tightest.remaining ||
      (limit.remaining === tightest.remaining && resetOf(limit) > resetOf(tightest))
    )
      tightest = limit;
  }
  const reset = resetOf(tightest);
  // A token bucket that holds a unit: t=0.
  const seconds = reset <= nowMs ? 0 : Math.max(1, Math.ceil((reset - nowMs) / 1000));
  return {
    'ratelimit-policy': rateLimitPolicy(limits),
    ratelimit: `"${tightest.name}";r=${tightest.remaining};t=${seconds}`,
  };
}

/**
 * Every limit, `"name";q=<limit>;w=<window seconds>` (draft-ietf-httpapi-ratelimit-headers); a
 * concurrency limit without `w`.
 */
function rateLimitPolicy(limits: readonly VerifyLimit[]): string {
  return limits
    .map((limit) =>
      limit.period === null
        ? `"${limit.name}";q=${limit.limit}`
        : `"${limit.name}";q=${limit.limit};w=${windowSeconds(limit, limit.period)}`,
    )
    .join(', ');
}

/** A sliding month is 30 days and a sliding year 365; fixed windows of the other periods are as long. */
const PERIOD_SECONDS: Record<Period, number> = {
  second: 1,
  minute: 60,
  hour: 3_600,
  day: 86_400,
  week: 604_800,
  month: 2_592_000,
  year: 31_536_000,
};

/**
 * The window a limit announces. A fixed month or year is the calendar's, the one that ends at the
 * limit's `resetTime` (the proxy measures the one holding its clock: the same window).
 */
function windowSeconds(limit: VerifyLimit, period: Period): number {
  if (limit.algorithm !== 'fixed' || (period !== 'month' && period !== 'year')) return PERIOD_SECONDS[period];
  const endMs = Date.parse(limit.resetTime!);
  const end = new Date(endMs);
  const startMs =
    period === 'month'
      ? Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - 1, 1)
      : Date.UTC(end.getUTCFullYear() - 1, 0, 1);
  return Math.round((endMs - startMs) / 1000);
}
