/**
 * Envoy's rate limit call when a stream is done (`apply_on_stream_done`, marked by the descriptor
 * entry `generic_key: tollgate-settle`): the cost a response reported, `hits_addend`, charged to the
 * key's limits and balances after its request was admitted. It is never refused (the request was
 * served) and adds cost only, not a request, to usage (docs/guides/external-authorization.md#envoy).
 */
import { TOKEN_PREFIX } from '../keys/token.js';
import { subjectsFor } from '../keys/key-subjects.js';
import type { ResolvedKey } from '../keys/key-cache.js';
import { countsVisitors, visitorOf } from '../limits/visitor.js';
import { countKeyUse } from '../proxy/key-use.js';
import { SETTLED_ELSEWHERE } from '../reservations/held.js';
import type { ExtauthDeps, GatewayRequest, GatewayTarget } from './gateway-decision.js';

/** The key of a credential this replica knows: a secret in its key cache, or a token it checked before. */
async function knownKey(deps: ExtauthDeps, secret: string): Promise<ResolvedKey | undefined> {
  if (secret.startsWith(TOKEN_PREFIX)) {
    const checked = deps.keyCache.tokens.get(secret);
    return checked === undefined ? undefined : deps.keyCache.freshToken(checked.claims.kid);
  }
  const found = deps.keyCache.fresh(secret) ?? deps.keyCache.resolve(secret);
  return found instanceof Promise ? await found : found;
}

/**
 * Charges `hits` units to what `request`'s key is charged for such a request, now, never refusing
 * (the limiter's settlement of a reservation of 0), and counts them in usage as cost only. A credential
 * that names no key (or a token this replica never checked) charges nothing.
 */
export async function chargeAfterStream(
  deps: ExtauthDeps,
  request: GatewayRequest,
  { path, routeId, client }: GatewayTarget,
  hits: number,
): Promise<void> {
  const key = request.secret === undefined ? undefined : await knownKey(deps, request.secret);
  // No route takes it: the request was refused, there is nothing to add to.
  if (key === undefined || routeId === undefined) return;
  const now = deps.clock();
  const subjects = subjectsFor(key, { routeId, method: request.method, path });
  if (subjects !== undefined) {
    const visitor = countsVisitors(subjects) ? visitorOf(client, request.customerId) : undefined;
    const reservation = { decision: SETTLED_ELSEWHERE, subjects, reserved: 0, admittedMs: now };
    await deps.limiter.settle(visitor === undefined ? reservation : { ...reservation, visitor }, hits, now);
  }
  countKeyUse(deps, key, path, routeId, request.customerId, 200, undefined, hits, 0, undefined, {
    costOnly: true,
  });
}
