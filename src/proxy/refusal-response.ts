/**
 * The answer to a refused request, its status and `WWW-Authenticate` from the refusal table
 * (refusals.ts), its body and `Retry-After` from what refused it.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { errorBody } from '../errors.js';
import { limitName, PLACE_RETRY_MS } from '../limits/rate-limiter.js';
import { perOf } from '../plans/plan.js';
import { secondsUntil } from '../plans/window.js';
import type { Refused } from './admission.js';
import { addLimitHeaders, isoSeconds } from './rate-limit-headers.js';
import { REFUSALS, type RefusalCode } from '../refusals.js';

export interface RefusalResponse {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: string;
  /** `latin1` when the body is ASCII (most are): Node then copies it byte for byte instead of encoding it. */
  readonly encoding?: 'latin1' | 'utf8';
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
  // Known when the body is an envelope written before.
  let length: number | undefined;
  if (refusal.code === 'rate_limit_exceeded' && refusal.limit !== undefined) {
    const { scope, rule, resetMs } = refusal.limit.decision;
    headers['retry-after'] = String(secondsUntil(resetMs, nowMs));
    addLimitHeaders(headers, refusal.limit, nowMs);
    body = JSON.stringify({
      error: REFUSALS.rate_limit_exceeded.message,
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
    addLimitHeaders(headers, refusal.limit, nowMs);
    body = JSON.stringify({
      error: REFUSALS.concurrency_limit_exceeded.message,
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
      error: REFUSALS.credits_exhausted.message,
      code: refusal.code,
      remaining: balance.remaining,
      cost,
      scope: balance.scope,
      resetTime: balance.refillMs === null ? null : isoSeconds(balance.refillMs),
    });
  } else {
    if (refusal.retryAtMs !== undefined)
      headers['retry-after'] = String(secondsUntil(refusal.retryAtMs, nowMs));
    if (REFUSALS[refusal.code].challenges) headers['www-authenticate'] = 'Bearer';
    ({ body, length } = envelopeOf(refusal.code));
  }
  headers['content-type'] = 'application/json; charset=utf-8';
  const bytes = length ?? Buffer.byteLength(body);
  headers['content-length'] = bytes;
  const status = REFUSALS[refusal.code].status;
  return { status, headers, body, encoding: bytes === body.length ? 'latin1' : 'utf8' };
}

/**
 * The JSON error envelope of each code and its length in bytes, written once: the same text answers
 * every request the code refuses, so a flood of refused requests (wrong keys) never serialises it again.
 */
const ENVELOPES = new Map<RefusalCode, { readonly body: string; readonly length: number }>();

function envelopeOf(code: RefusalCode): { readonly body: string; readonly length: number } {
  let envelope = ENVELOPES.get(code);
  if (envelope === undefined) {
    const body = JSON.stringify(errorBody(code));
    envelope = { body, length: Buffer.byteLength(body) };
    ENVELOPES.set(code, envelope);
  }
  return envelope;
}
