/**
 * `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`: Envoy's rate limit filter. A call of
 * EXTAUTH_RLS_DOMAIN whose descriptors hold an `api_key` entry is decided for that key, as the proxy
 * decides a request of cost `hits_addend`; the entries `path`, `method`, `host` and `remote_address`,
 * when a descriptor holds them, describe the request as the proxy would see it. A call whose
 * descriptors also hold `generic_key: tollgate-settle` (a stream is done) adds its `hits_addend` as
 * cost, never refused (stream-done-charge.ts).
 */
import { performance } from 'node:perf_hooks';
import { limitName, type LimitState } from '../limits/rate-limiter.js';
import { canonicalAddress } from '../net/canonical-address.js';
import { isConcurrency, MAX_COST } from '../plans/plan.js';
import { requestIdOf } from '../proxy/forwarding-headers.js';
import { MAX_SETTLE_UNITS } from '../plans/usage-pricing.js';
import { decide, targetOf, type ExtauthDeps, type GatewayDecision } from './gateway-decision.js';
import { chargeAfterStream } from './stream-done-charge.js';

interface Entry {
  readonly key: string;
  readonly value: string;
}

export interface RateLimitRequest {
  readonly domain?: string;
  readonly descriptors?: readonly { readonly entries?: readonly Entry[] }[];
  /** 0 or unset: 1. */
  readonly hits_addend?: number;
}

type Code = 'OK' | 'OVER_LIMIT';
type Unit = 'UNKNOWN' | 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'MONTH' | 'YEAR';

interface DescriptorStatus {
  readonly code: Code;
  readonly current_limit?: { readonly name: string; readonly requests_per_unit: number; readonly unit: Unit };
  readonly limit_remaining?: number;
  readonly duration_until_reset?: { readonly seconds: number; readonly nanos: number };
}

export interface RateLimitResponse {
  readonly overall_code: Code;
  readonly statuses: DescriptorStatus[];
  readonly response_headers_to_add: { readonly key: string; readonly value: string }[];
  readonly raw_body?: Buffer;
}

/** Why a call gets no decision: answered with a gRPC error instead. */
export class RateLimitCallError extends Error {
  constructor(
    /** google/rpc/code.proto: 3 INVALID_ARGUMENT, 12 UNIMPLEMENTED, 14 UNAVAILABLE. */
    readonly grpcCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** The descriptor entry and value that mark a call charging cost after the response. */
export const SETTLE_ENTRY = { key: 'generic_key', value: 'tollgate-settle' } as const;

const UNITS: Readonly<Record<string, Unit>> = {
  second: 'SECOND',
  minute: 'MINUTE',
  hour: 'HOUR',
  day: 'DAY',
  month: 'MONTH',
  year: 'YEAR',
};

const ok = (request: RateLimitRequest): RateLimitResponse => ({
  overall_code: 'OK',
  statuses: (request.descriptors ?? []).map(() => ({ code: 'OK' })),
  response_headers_to_add: [],
});

/** An entry's value in the first descriptor holding `key`. */
function entryOf(request: RateLimitRequest, key: string): string | undefined {
  for (const descriptor of request.descriptors ?? [])
    for (const entry of descriptor.entries ?? []) if (entry.key === key) return entry.value;
  return undefined;
}

/** `gone()`: the call will not be answered (`decide`). */
export async function shouldRateLimit(
  deps: ExtauthDeps,
  domain: string,
  request: RateLimitRequest,
  gone: () => boolean,
): Promise<RateLimitResponse> {
  const receivedAt = performance.now();
  if (request.domain !== domain) return ok(request);
  const descriptors = request.descriptors ?? [];
  const settles = descriptors.some((d) =>
    d.entries?.some((e) => e.key === SETTLE_ENTRY.key && e.value === SETTLE_ENTRY.value),
  );
  const secret = entryOf(request, 'api_key');
  // Nothing names a key: nothing to decide (Envoy's ext_authz refuses a request without one).
  if (secret === undefined) return ok(request);
  const cost = request.hits_addend || 1;
  const most = settles ? MAX_SETTLE_UNITS : MAX_COST;
  if (!Number.isInteger(cost) || cost > most)
    throw new RateLimitCallError(3, `hits_addend must be 1 to ${most}`);
  const address = entryOf(request, 'remote_address');
  const gatewayRequest = {
    requestId: requestIdOf({ 'x-request-id': entryOf(request, 'request_id') }),
    receivedAt,
    method: (entryOf(request, 'method') ?? 'GET').toUpperCase(),
    target: entryOf(request, 'path'),
    host: entryOf(request, 'host'),
    client: address === undefined ? undefined : canonicalAddress(address),
    secret,
    origin: undefined,
    referer: undefined,
    customerId: undefined,
    cost,
  };
  if (settles) {
    // A stream is done: its cost is added, never refused; a target the proxy would refuse adds nothing.
    const target = targetOf(deps, gatewayRequest);
    if (target !== undefined) await chargeAfterStream(deps, gatewayRequest, target, cost);
    return ok(request);
  }
  const decision = await decide(deps, 'should_rate_limit', gatewayRequest, gone);
  if (!decision.admitted && decision.answer.status === 503)
    throw new RateLimitCallError(14, decision.admission?.code ?? 'unavailable');
  return answerOf(descriptors, decision, deps.clock());
}

function answerOf(
  descriptors: NonNullable<RateLimitRequest['descriptors']>,
  decision: GatewayDecision,
  nowMs: number,
): RateLimitResponse {
  const code: Code = decision.admitted ? 'OK' : 'OVER_LIMIT';
  const limit = decision.admission?.limit?.decision;
  const decided: DescriptorStatus = limit === undefined ? { code } : { code, ...limitStatus(limit, nowMs) };
  const statuses = descriptors.map((d) =>
    d.entries?.some((e) => e.key === 'api_key') === true ? decided : { code: 'OK' as const },
  );
  if (decision.admitted)
    return {
      overall_code: code,
      statuses,
      response_headers_to_add: decision.limitHeaders.map(([key, value]) => ({ key, value })),
    };
  const { headers, body } = decision.answer;
  const response_headers_to_add = [];
  for (const key in headers)
    if (key !== 'content-length') response_headers_to_add.push({ key, value: String(headers[key]) });
  return { overall_code: code, statuses, response_headers_to_add, raw_body: Buffer.from(body) };
}

function limitStatus(limit: LimitState, nowMs: number): Omit<DescriptorStatus, 'code'> {
  const untilMs = Math.max(0, limit.resetMs - nowMs);
  return {
    current_limit: {
      name: limitName(limit.scope, limit.rule),
      requests_per_unit: limit.rule.limit,
      unit: isConcurrency(limit.rule) ? 'UNKNOWN' : (UNITS[limit.rule.period] ?? 'UNKNOWN'),
    },
    limit_remaining: Math.max(0, limit.remaining),
    duration_until_reset: { seconds: Math.floor(untilMs / 1000), nanos: (untilMs % 1000) * 1_000_000 },
  };
}
