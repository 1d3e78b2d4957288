/**
 * How a request that presented a valid key is counted: its usage and the key's last use. The proxy
 * counts every request it finishes this way, and verify (docs/guides/verify-and-client.md) each decision, so a key
 * used both ways is counted alike.
 */
import type { LastUseTracker } from '../keys/last-use.js';
import type { ResolvedKey } from '../keys/key-cache.js';
import { limitName } from '../limits/rate-limiter.js';
import { perOf, shownPeriod } from '../plans/plan.js';
import type { UsageRecorder } from '../usage/recorder.js';
import type { FailureFacts, Outcome } from '../usage/usage.js';
import type { Admission, Refused } from './admission.js';
import { REFUSALS } from '../refusals.js';

export interface KeyUseDeps {
  readonly recorder: Pick<UsageRecorder, 'record'>;
  /** Notes when each key was presented: `lastUsedAt`. */
  readonly lastUse: Pick<LastUseTracker, 'used'>;
  readonly clock: () => number;
}

/**
 * One request of `key`, counted once: under `endpoint` (its path, without the query), the route it
 * took (null: the catch-all, or none) and the consumer the key belongs to now, successful when
 * `status` is below 400.
 */
export function countKeyUse(
  deps: KeyUseDeps,
  key: Pick<ResolvedKey, 'id' | 'consumerId'>,
  endpoint: string,
  routeId: string | null,
  customerId: string | undefined,
  status: number,
  outcome: Outcome | undefined,
  cost: number,
  durationMs: number,
  /** For the failure log, when the request failed (`failureFacts`). */
  failure?: FailureFacts,
  /**
   * `costOnly`: cost added to a request counted before, not a request (RequestFacts.costOnly);
   * `unsettled`: nothing reported what it used, so it kept its reservation (src/proxy/settlement.ts).
   */
  kind?: { readonly costOnly?: boolean; readonly unsettled?: boolean },
): void {
  const now = deps.clock();
  deps.lastUse.used(key.id, now);
  deps.recorder.record({
    keyId: key.id,
    // Filed under the consumer the key belonged to when the request was made (docs/guides/consumers.md).
    consumerId: key.consumerId ?? null,
    endpoint,
    routeId,
    customerId,
    status,
    outcome,
    cost,
    durationMs,
    atMs: now,
    failure,
    ...(kind?.costOnly === true && { costOnly: true }),
    ...(kind?.unsettled === true && { unsettled: true }),
  });
}

/** A decision made without forwarding anything, as its caller names it. */
export interface DecidedRequest {
  readonly requestId: string;
  readonly method: string;
  /** The usage endpoint: the request's path, without the query. */
  readonly path: string;
  readonly routeId: string | null;
  /** The client's customer id; a token's `sub` (the admission's `subject`) stands in its place. */
  readonly customerId: string | undefined;
  readonly clientAddress: string | null;
}

/**
 * A decision that forwards nothing (verify, a gateway's authorization call), counted as the proxy
 * counts a request: admitted as a success (200) charged its cost, or failed (499) when its caller left
 * before the answer, as a client that left while admitted (src/proxy/entry.ts); refused with the
 * proxy's status and outcome. A request without a valid key is not counted, as on the proxy.
 */
export function countDecision(
  deps: KeyUseDeps,
  admission: Admission,
  request: DecidedRequest,
  durationMs: number,
  { callerGone = false }: { readonly callerGone?: boolean } = {},
): void {
  if (admission.key === undefined) return;
  const refusal = admission.admitted ? undefined : REFUSALS[admission.code];
  const status = refusal !== undefined ? refusal.status : callerGone ? 499 : 200;
  const outcome = refusal?.usageOutcome;
  countKeyUse(
    deps,
    admission.key,
    request.path,
    request.routeId,
    admission.subject ?? request.customerId,
    status,
    outcome,
    admission.admitted ? admission.cost : 0,
    durationMs,
    failureFacts(status, outcome, admission.admitted ? undefined : admission, {
      requestId: request.requestId,
      method: request.method,
      clientAddress: request.clientAddress,
    }),
  );
}

/**
 * What the failure log keeps of a request beyond its usage, or undefined when it did not fail: the
 * refusal's code and limit, else what the backend did (docs/guides/failures.md).
 */
export function failureFacts(
  status: number,
  outcome: Outcome | undefined,
  refusal: Pick<Refused, 'code' | 'limit'> | undefined,
  request: { readonly requestId: string; readonly method: string; readonly clientAddress: string | null },
): FailureFacts | undefined {
  if (status < 400) return undefined;
  const rule =
    refusal !== undefined && REFUSALS[refusal.code].logsLimit ? refusal.limit?.decision : undefined;
  return {
    ...request,
    code: refusal?.code ?? backendFailureCode(status, outcome),
    limit:
      rule === undefined
        ? null
        : {
            name: limitName(rule.scope, rule.rule),
            period: shownPeriod(rule.rule),
            scope: rule.scope,
            limit: rule.rule.limit,
            per: perOf(rule.rule),
          },
  };
}

/** The failure log's code of a request the backend failed, or whose client left (499). */
function backendFailureCode(status: number, outcome: Outcome | undefined): string {
  if (status === 499) return 'client_closed';
  if (outcome === 'backendUnreachable') return status === 504 ? 'gateway_timeout' : 'backend_unreachable';
  return status >= 500 ? 'backend_error' : 'backend_client_error';
}
