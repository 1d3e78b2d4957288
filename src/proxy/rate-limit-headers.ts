import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { isConcurrency, type LimitRule } from '../plans/plan.js';
import { limitName, type LimitState } from '../limits/rate-limiter.js';
import type { Scope, Subject } from '../plans/subject.js';
import { slidingPeriodMs } from '../limits/sliding-window.js';
import { secondsUntil, windowAt, windowSeconds } from '../plans/window.js';
import type { Limited } from './admission.js';

export { isoSeconds } from '../plans/window.js';

/**
 * RateLimit header fields in the structured-field syntax of draft-ietf-httpapi-ratelimit-headers
 * (draft -08 onwards, current as of -11), each limit named by its `name` (by default its period), a
 * consumer's as `consumer.<name>` (limitName):
 *
 *   RateLimit-Policy: "second";q=10;w=1, "day";q=10000;w=86400    every limit: quota q per w seconds
 *   RateLimit: "day";r=0;t=42                                      the limit with the fewest left
 *
 * The policy lists the limits subject by subject, in the order of the decision (the key's, then its
 * consumer's). For a fixed monthly or yearly limit `w` is the length of the current month or year; a
 * token bucket's `q` is its refill per `w` (its `r` may reach its burst); a concurrency limit has no `w`.
 */
export function rateLimitPolicyHeader(subjects: readonly Subject[], nowMs: number): string {
  const held = policies.get(subjects);
  if (held !== undefined && nowMs >= held.from && nowMs < held.until) return held.header;
  let header = '';
  for (const { scope, plan } of subjects) {
    for (const rule of plan.limits) header += (header === '' ? '' : ', ') + policyItem(scope, rule, nowMs);
  }
  const month = windowAt('month', nowMs);
  policies.set(subjects, { header, from: month.start, until: month.end });
  return header;
}

/**
 * Each set of subjects' policy, for the UTC month it was written in: only a monthly or yearly limit's
 * `w` changes, and only as a month begins. A key's subjects are made once per plan it has (`Pricing`
 * in `src/plans/pricing.ts`), so every response of a key writes the same field.
 */
const policies = new WeakMap<readonly Subject[], { header: string; from: number; until: number }>();

function policyItem(scope: Scope, rule: LimitRule, nowMs: number): string {
  const item = `"${limitName(scope, rule)}";q=${rule.limit}`;
  // A concurrency limit counts requests in flight, in no window.
  if (isConcurrency(rule)) return item;
  const seconds =
    rule.algorithm === 'fixed' ? windowSeconds(rule.period, nowMs) : slidingPeriodMs(rule.period) / 1000;
  return `${item};w=${seconds}`;
}

/** `t`: seconds until `resetMs`, at least 1; 0 for a token bucket that holds a unit now. */
export function rateLimitHeader(decision: LimitState, nowMs: number): string {
  const t = decision.resetMs <= nowMs ? 0 : secondsUntil(decision.resetMs, nowMs);
  return `"${limitName(decision.scope, decision.rule)}";r=${decision.remaining};t=${t}`;
}

/**
 * The one place both fields are written, for every answer to a limited request: onto a backend's head
 * as `[name, value, …]`, or into the header object of Tollgate's own answer or of a WebSocket's 101.
 */
export function addLimitHeaders(
  into: string[] | OutgoingHttpHeaders | IncomingHttpHeaders,
  limit: Limited,
  nowMs: number,
): void {
  const policy = rateLimitPolicyHeader(limit.subjects, nowMs);
  const state = rateLimitHeader(limit.decision, nowMs);
  if (Array.isArray(into)) into.push('ratelimit-policy', policy, 'ratelimit', state);
  else {
    into['ratelimit-policy'] = policy;
    into.ratelimit = state;
  }
}
