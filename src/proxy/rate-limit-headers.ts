import type { LimitRule } from '../plans/plan.js';
import { limitName, type LimitState } from '../limits/rate-limiter.js';
import type { Scope, Subject } from '../plans/subject.js';
import { slidingPeriodMs } from '../limits/sliding-window.js';
import { secondsUntil, windowSeconds } from '../plans/window.js';

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
 * consumer's). For a fixed monthly or yearly limit `w` is the length of the current month or year.
 */
export function rateLimitPolicyHeader(subjects: readonly Subject[], nowMs: number): string {
  let header = '';
  for (const { scope, plan } of subjects) {
    for (const rule of plan.limits) header += (header === '' ? '' : ', ') + policyItem(scope, rule, nowMs);
  }
  return header;
}

function policyItem(scope: Scope, rule: LimitRule, nowMs: number): string {
  const seconds =
    rule.algorithm === 'fixed' ? windowSeconds(rule.period, nowMs) : slidingPeriodMs(rule.period) / 1000;
  return `"${limitName(scope, rule)}";q=${rule.limit};w=${seconds}`;
}

export function rateLimitHeader(decision: LimitState, nowMs: number): string {
  return `"${limitName(decision.scope, decision.rule)}";r=${decision.remaining};t=${secondsUntil(decision.resetMs, nowMs)}`;
}
