/**
 * Verify without proxying (docs/guides/verify-and-client.md): a request decided by the proxy's own admission
 * (`admit`, with its key cache, limiter, failed-key throttle and route table) and counted in usage as
 * the proxy counts it, without forwarding anything. It changes no management state: no audit entry.
 */
import { performance } from 'node:perf_hooks';
import { AppError } from '../../../errors.js';
import type { LimitState } from '../../../limits/rate-limiter.js';
import type { Metrics } from '../../../ops/metrics.js';
import { normalisedPath } from '../../../plans/normalised-path.js';
import { secondsUntil } from '../../../plans/window.js';
import { admit, type Admission } from '../../../proxy/admission.js';
import { canonicalAddress } from '../../../net/canonical-address.js';
import { hasDotSegment } from '../../../proxy/request-target.js';
import type { VerifyDeps } from '../../context.js';
import { RawJson } from '../../json-as-written.js';
import { defineOperation } from '../../operation.js';
import { limitView } from '../plans/rate-limit-views.js';
import { isoTimestamp } from '../../time-format.js';
import {
  VerifyRequest,
  VerifyResponse,
  verifyRequestProblems,
  VerifySettleRequest,
  VerifySettleResponse,
  type VerifyCode,
} from './schemas.js';

/** Usage files a verify without `path` under this endpoint. */
export const VERIFY_ENDPOINT = '(verify)';

/** The answer, its key's metadata as the caller wrote it. */
type VerifyAnswer = Omit<VerifyResponse, 'metadata'> & { metadata?: RawJson };

/**
 * The route a request takes: the proxy's, found in its route table for `path` (undefined: none, and
 * there is no catch-all). A request without a path takes none: it is decided as the catch-all's.
 */
function routeOf(
  deps: VerifyDeps,
  body: VerifyRequest,
  method: string,
  path: string | undefined,
): string | null | undefined {
  return path === undefined ? null : deps.routing.routeIdOf(body.host, method, path);
}

/** The decision in the terms of the verify answer (schema `VerifyResponse`). */
function answerOf(admission: Admission, states: readonly LimitState[], nowMs: number): VerifyAnswer {
  const key = admission.key;
  const answer: VerifyAnswer = {
    valid: admission.admitted,
    code: admission.admitted ? 'ok' : (admission.code as VerifyCode),
    ...(key !== undefined && {
      consumerApiKeyId: key.id,
      consumerId: key.consumerId ?? null,
      name: key.identity.name,
      externalId: key.identity.externalId,
      metadata: new RawJson(key.identity.metadata),
    }),
    limits: states.map((state) => ({ ...limitView(state), algorithm: state.rule.algorithm })),
  };
  const until = (atMs: number) => ({
    resetTime: isoTimestamp(atMs),
    retryAfterSeconds: secondsUntil(atMs, nowMs),
  });
  if (admission.admitted) {
    const balance = admission.balance;
    return {
      ...answer,
      cost: admission.cost,
      ...(balance !== undefined && {
        credits: {
          remaining: balance.remaining,
          scope: balance.scope,
          resetTime: balance.refillMs === null ? null : isoTimestamp(balance.refillMs),
        },
      }),
    };
  }
  if (admission.short !== undefined) {
    const { balance, cost } = admission.short;
    const refill = balance.refillMs;
    return {
      ...answer,
      cost,
      credits: {
        remaining: balance.remaining,
        scope: balance.scope,
        resetTime: refill === null ? null : isoTimestamp(refill),
      },
      ...(refill === null ? { resetTime: null } : until(refill)),
    };
  }
  if (
    (admission.code === 'rate_limit_exceeded' || admission.code === 'concurrency_limit_exceeded') &&
    admission.limit !== undefined
  )
    return { ...answer, ...until(admission.limit.decision.resetMs) };
  if (admission.retryAtMs !== undefined) return { ...answer, ...until(admission.retryAtMs) };
  return answer;
}

/**
 * Decides `body` as the proxy would and counts it: the answer as JSON text, timed from `receivedAt`
 * (`performance.now()` when the call arrived). Throws AppError when no decision can be made (503).
 */
export async function verifiedText(
  deps: VerifyDeps,
  metrics: Pick<Metrics, 'verifications'>,
  body: VerifyRequest,
  receivedAt = performance.now(),
  /** The call's `x-request-id`, for the failure log. */
  requestId = '',
): Promise<string> {
  // Normalised as the proxy normalises a request's, so that both match and count the same path.
  const requestPath = body.path === undefined ? undefined : normalisedPath(body.path);
  // Refused before its key is looked at, as the proxy refuses it: nothing is counted.
  if (requestPath !== undefined && hasDotSegment(requestPath)) {
    metrics.verifications.inc({ code: 'invalid_request_target' });
    return textOf({ valid: false, code: 'invalid_request_target', limits: [] });
  }
  const method = body.method?.toUpperCase() ?? '';
  const path = requestPath ?? VERIFY_ENDPOINT;
  const states: LimitState[] = [];
  const routeId = routeOf(deps, body, method, requestPath);
  const admission = await admit(deps, {
    requestId,
    secret: body.key,
    client: body.clientAddress === undefined ? undefined : canonicalAddress(body.clientAddress),
    origin: body.origin,
    ...(body.customerId !== undefined && body.customerId !== '' && { customerId: body.customerId }),
    routeId,
    method,
    path,
    ...(body.cost !== undefined && { cost: body.cost }),
    ...(body.reserve !== undefined && { reserve: body.reserve }),
    ...(body.body !== undefined && { body: { json: body.body } }),
    states,
  });
  // Verify asks whether a place is free and holds none: one taken for the decision goes back at once.
  if (admission.admitted) admission.release?.();
  const code = admission.admitted ? 'ok' : admission.code;
  metrics.verifications.inc({ code });
  const reservationId = await deps.reservations.counted(
    admission,
    {
      requestId,
      method,
      path,
      routeId: routeId ?? null,
      customerId: body.customerId || undefined,
      clientAddress: body.clientAddress ?? null,
    },
    performance.now() - receivedAt,
  );
  if (code === 'limit_unavailable' || code === 'auth_unavailable') throw new AppError(code);
  const answer = answerOf(admission, states, deps.clock());
  return textOf(reservationId === undefined ? answer : { ...answer, reservationId });
}

/** The answer as JSON; the key's metadata (last) as the caller wrote it, not through an object. */
function textOf({ metadata, ...answer }: VerifyAnswer): string {
  const text = JSON.stringify(answer);
  return metadata === undefined ? text : `${text.slice(0, -1)},"metadata":${metadata.text}}`;
}

export const VERIFY_PATH = '/tollgate/verify';

export const verifyOperation = defineOperation({
  id: 'verifyKey',
  method: 'post',
  path: VERIFY_PATH,
  scope: 'keys:verify',
  tag: 'Verify',
  summary: 'Decide a request as the proxy would, without forwarding it',
  description: `For servers the proxy does not stand in front of. The request is decided by the proxy's own admission, in its order: the key (unknown, disabled, expired), the route it would take (from \`path\`, \`method\` and \`host\`) and the key's routes, then the limits of the key and its consumer, the balances and the cost, all charged in one step, exactly across replicas, with the proxy's leases for a hot key. A known key is answered from memory (no database query). A refusal is an answer (\`valid: false\` and the proxy's \`code\`), not an error, and charges nothing. Each call is counted in the key's usage as the proxy counts a request: under \`path\` (default \`${VERIFY_ENDPOINT}\`) and \`customerId\`, successful when admitted, else failed with the proxy's status and outcome. Wrong keys are throttled per \`clientAddress\` (the end client's), sharing the proxy's budget; without it, not at all. It changes no management state: no audit entry.`,
  readOnly: true,
  body: { schema: VerifyRequest, check: verifyRequestProblems },
  success: {
    status: 200,
    description:
      'The decision: `valid` and `code`, the key, its limits after the decision, and when to retry',
    schema: VerifyResponse,
  },
  errors: {
    auth_unavailable: 'A key not in memory could not be looked up (the database is unavailable); retry later',
    limit_unavailable:
      'REDIS_FAILURE_MODE=closed while Redis is unreachable: no decision can be made (counted as failed, as the proxy counts its 503)',
  },
  async handle({ body, res, ctx }) {
    res
      .type('application/json')
      .send(
        await verifiedText(
          ctx.verification,
          ctx.metrics,
          body,
          undefined,
          String(res.get('x-request-id') ?? ''),
        ),
      );
  },
});

export const verifySettleOperation = defineOperation({
  id: 'settleVerifiedRequest',
  method: 'post',
  path: `${VERIFY_PATH}/settle`,
  scope: 'keys:verify',
  tag: 'Verify',
  summary: 'Settle a reservation at the units the request used',
  description: `For a request whose cost is known only once it is served (docs/guides/usage-priced-apis.md): the \`reservationId\` of a verify answer (\`reserve\`, or a cost entry that settles), or the \`x-tollgate-reservation\` a gateway's authorization call answered. \`units − reserved\` is charged to every limit and balance the reservation was charged to, in the windows and periods it was charged in (a refund when negative), in one step that is never refused, and the request is counted in usage once, at \`units\`. Its concurrency places, if a gateway's decision took any, are given back. Any replica settles any reservation, once; one not settled within RESERVATION_TTL_SECONDS (default 900) keeps its reservation as its cost and is counted unsettled.`,
  readOnly: true,
  body: { schema: VerifySettleRequest },
  success: {
    status: 200,
    description: 'Settled: the units the request cost, and what the settlement charged',
    schema: VerifySettleResponse,
  },
  errors: {
    reservation_not_found:
      'No reservation to settle has that id: unknown, settled already, or past RESERVATION_TTL_SECONDS (it then keeps its reservation as its cost)',
    limit_unavailable:
      'Redis does not answer: not settled yet. The replica that may have taken the reservation settles it at these units once Redis answers (for a minute); send the call again later: 404 then means it was settled',
  },
  async handle({ body, res, ctx }) {
    let settled;
    try {
      settled = await ctx.verification.reservations.settle(body.reservationId, body.units);
    } catch (err) {
      ctx.logger.warn({ err }, 'settling a reservation failed');
      throw new AppError('limit_unavailable');
    }
    if (settled === undefined) throw new AppError('reservation_not_found');
    res.json(settled);
  },
});

export const verifyOperations = [verifyOperation, verifySettleOperation];
