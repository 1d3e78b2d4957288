import type { LimitDecision } from '../limits/rate-limiter.js';
import { secondsUntil, windowSeconds, type RateLimitPolicy } from '../limits/window.js';

/**
 * RateLimit header fields in the structured-field syntax of draft-ietf-httpapi-ratelimit-headers
 * (draft -08 onwards, current as of -11):
 *
 *   RateLimit-Policy: "default";q=1000;w=3600     quota q per window of w seconds
 *   RateLimit: "default";r=0;t=42                 r remaining, t seconds until the window resets
 *
 * One policy per key, always named "default": the plan's own id is the operator's business and is
 * not shown to consumers. For monthly plans `w` is the length of the current month.
 */
export const POLICY_NAME = '"default"';

export function rateLimitPolicyHeader(policy: RateLimitPolicy, nowMs: number): string {
  return `${POLICY_NAME};q=${policy.limit};w=${windowSeconds(policy.period, nowMs)}`;
}

export function rateLimitHeader(decision: LimitDecision, nowMs: number): string {
  return `${POLICY_NAME};r=${decision.remaining};t=${secondsUntil(decision.resetMs, nowMs)}`;
}

/** `YYYY-MM-DDThh:mm:ssZ`, the contract's timestamp format (no fraction). */
export function isoSeconds(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19) + 'Z';
}
