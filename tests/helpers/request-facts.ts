import type { RequestFacts } from '../../src/usage/usage.js';

/**
 * One finished request as the proxy reports it: by default an admitted request of no consumer, on
 * the catch-all, answered 200 in 1 ms now; a limiter refusal is `refused('rateLimited')`'s shape.
 */
export function requestFacts(keyId: string, facts: Partial<Omit<RequestFacts, 'keyId'>> = {}): RequestFacts {
  return {
    keyId,
    consumerId: null,
    endpoint: '/v1/a',
    routeId: null,
    customerId: undefined,
    status: 200,
    outcome: undefined,
    cost: 1,
    durationMs: 1,
    atMs: Date.now(),
    ...facts,
  };
}

/** What a request refused by Tollgate carries: its status, its outcome and no cost. */
export const refused = (outcome: 'rateLimited' | 'disabled' | 'expired') =>
  ({
    status: outcome === 'rateLimited' ? 429 : outcome === 'disabled' ? 403 : 401,
    outcome,
    cost: 0,
  }) as const;
