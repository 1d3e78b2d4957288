/**
 * The refusals admission (admission.ts) answers from what the credential alone tells, and the
 * failed-authentication throttle it asks before checking one it does not know.
 */
import type { ResolvedKey } from '../keys/key-cache.js';
import type { RefusalCode } from '../refusals.js';
import type { AdmissionDeps, AdmissionRequest, Refused } from './admission.js';
import type { Attempt, RefusedAttempt } from './auth-throttle.js';

export function refused(code: RefusalCode, key?: ResolvedKey, limit?: Refused['limit']): Refused {
  return { admitted: false, code, key, limit };
}

/** The throttle's leave to check `credential` from `client`; undefined when nothing is throttled. */
export async function askThrottle(
  deps: AdmissionDeps,
  client: string | undefined,
  credential: string,
): Promise<Attempt | undefined> {
  if (deps.authThrottle === undefined || client === undefined) return undefined;
  const asked = deps.authThrottle.attempt(client, deps.clock(), credential);
  return asked instanceof Promise ? await asked : asked;
}

/** A key look-up that failed (the database down, or a bug): logged with its cause, answered 503. */
export function keyStoreFailed(deps: AdmissionDeps, request: AdmissionRequest, err: unknown): Refused {
  deps.logger.error({ err, reqId: request.requestId }, 'key look-up failed');
  return refused('auth_unavailable');
}

/** A wrong checksum (keys/secret-format.ts): a failed guess counted with no store call, or throttled. */
export function forgedRefusal(deps: AdmissionDeps, client: string | undefined): Refused {
  const blocked = client === undefined ? undefined : deps.authThrottle?.failedUnchecked(client, deps.clock());
  return blocked === undefined ? refused('invalid_api_key') : throttled(blocked);
}

export const throttled = (attempt: RefusedAttempt): Refused => ({
  ...refused('too_many_failed_attempts'),
  retryAtMs: attempt.retryAtMs,
});
