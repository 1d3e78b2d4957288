import type { IncomingHttpHeaders } from 'node:http';

/**
 * The consumer's credential: `Authorization: Bearer <secret>`, else `x-api-key`. `undefined` when
 * neither is present; an empty string when one is present but can't carry a secret (empty bearer,
 * repeated header), which the caller refuses as invalid rather than missing.
 */
export function credentialOf(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined && authorization.slice(0, 7).toLowerCase() === 'bearer ') {
    return authorization.slice(7).trim();
  }
  const apiKey = headers['x-api-key'];
  if (apiKey !== undefined) return typeof apiKey === 'string' ? apiKey.trim() : '';
  // Another scheme (Basic, …) is a credential, just not one Tollgate accepts.
  return authorization === undefined ? undefined : '';
}
