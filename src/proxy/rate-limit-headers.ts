import type { LimitRule, Plan } from '../limits/plan.js';
import type { LimitDecision } from '../limits/rate-limiter.js';
import { slidingPeriodMs } from '../limits/sliding-window.js';
import { secondsUntil, windowSeconds } from '../limits/window.js';

/**
 * RateLimit header fields in the structured-field syntax of draft-ietf-httpapi-ratelimit-headers
 * (draft -08 onwards, current as of -11), each limit named by its `name` (by default its period):
 *
 *   RateLimit-Policy: "second";q=10;w=1, "day";q=10000;w=86400    every limit: quota q per w seconds
 *   RateLimit: "day";r=0;t=42                                      the limit with the fewest left
 *
 * For a fixed monthly or yearly limit `w` is the length of the current month or year.
 */
export function rateLimitPolicyHeader(plan: Plan, nowMs: number): string {
  const limits = plan.limits;
  let header = policyItem(limits[0]!, nowMs);
  for (let i = 1; i < limits.length; i++) header += ', ' + policyItem(limits[i]!, nowMs);
  return header;
}

function policyItem(rule: LimitRule, nowMs: number): string {
  const seconds = rule.algorithm === 'fixed' ? windowSeconds(rule.period, nowMs) : slidingPeriodMs(rule.period) / 1000;
  return `"${rule.name}";q=${rule.limit};w=${seconds}`;
}

export function rateLimitHeader(decision: LimitDecision, nowMs: number): string {
  return `"${decision.rule.name}";r=${decision.remaining};t=${secondsUntil(decision.resetMs, nowMs)}`;
}

/** `YYYY-MM-DDThh:mm:ssZ`, the contract's timestamp format (no fraction). */
export function isoSeconds(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19) + 'Z';
}
