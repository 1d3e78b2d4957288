/**
 * Minting a short-lived token of one of the consumer's keys (`POST /api/keys/{id}/tokens`,
 * src/portal/README.md): the key page's dialog and the API reference's "try it" both mint this way.
 * The token is answered once and lives in the caller's memory only.
 */
import { call, segment } from './portal-api';
import type { MintedToken } from './portal-types';

/** The lifetimes the pages offer: the API allows 1 s to 24 h, 1 hour when none is named. */
export const TOKEN_LIFETIMES = [
  { seconds: 900, label: '15 minutes' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '24 hours' },
] as const;

export function mintToken(keyId: string, expiresInSeconds: number): Promise<MintedToken> {
  return call<MintedToken>('POST', `/keys/${segment(keyId)}/tokens`, { body: { expiresInSeconds } });
}
