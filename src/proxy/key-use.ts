/**
 * How a request that presented a valid key is counted: its usage and the key's last use. The proxy
 * counts every request it finishes this way, and verify (docs/guides/verify-and-client.md) each decision, so a key
 * used both ways is counted alike.
 */
import type { ErrorCode } from '../errors.js';
import type { LastUseTracker } from '../keys/last-use.js';
import type { ResolvedKey } from '../keys/key-cache.js';
import type { UsageRecorder } from '../usage/recorder.js';
import type { Outcome } from '../usage/usage.js';

export interface KeyUseDeps {
  readonly recorder: Pick<UsageRecorder, 'record'>;
  /** Notes when each key was presented: `lastUsedAt`. */
  readonly lastUse: Pick<LastUseTracker, 'used'>;
  readonly clock: () => number;
}

/** The outcome in usage of each refusal that has one (docs/decisions/0026). */
export const REFUSAL_OUTCOMES: Partial<Record<ErrorCode, Outcome>> = {
  rate_limit_exceeded: 'rateLimited',
  credits_exhausted: 'creditsExhausted',
  key_disabled: 'disabled',
  key_expired: 'expired',
  route_not_allowed: 'routeNotAllowed',
  origin_not_allowed: 'originNotAllowed',
  address_not_allowed: 'addressNotAllowed',
};

/**
 * One request of `key`, counted once: under `endpoint` (its path, without the query), the route it
 * took (null: the catch-all, or none) and the consumer the key belongs to now, successful when
 * `status` is below 400.
 */
export function countKeyUse(
  deps: KeyUseDeps,
  key: ResolvedKey,
  endpoint: string,
  routeId: string | null,
  customerId: string | undefined,
  status: number,
  outcome: Outcome | undefined,
  cost: number,
  durationMs: number,
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
  });
}
