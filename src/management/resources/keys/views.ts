/** Keys as the management API shows them: list items, the detail's fields, the answer to a change. */
import { decryptSecret } from '../../../keys/secret.js';
import type { KeyRow } from '../../../store/key-row.js';
import type { Credits } from '../credits/balance-schemas.js';
import type { KeyResponse, ListKeysResponse } from './schemas.js';
import { RawJson } from '../../json-as-written.js';
import { isoTimestamp } from '../../time-format.js';

const isoOrNull = (instant: Date | null): string | null => (instant === null ? null : isoTimestamp(instant));

/** The lifecycle fields every key answer carries (docs/guides/keys.md, How keys behave). */
type KeyStateFields =
  | 'rateLimitId'
  | 'enabled'
  | 'expiresAt'
  | 'externalId'
  | 'lastUsedAt'
  | 'consumerId'
  | 'allowedRouteIds'
  | 'allowedOrigins'
  | 'allowedAddresses';

export function keyState(key: Pick<KeyRow, KeyStateFields>): Pick<KeyResponse, KeyStateFields> {
  return {
    rateLimitId: key.rateLimitId,
    enabled: key.enabled,
    expiresAt: isoOrNull(key.expiresAt),
    externalId: key.externalId,
    lastUsedAt: isoOrNull(key.lastUsedAt),
    consumerId: key.consumerId,
    allowedRouteIds: key.allowedRouteIds === null ? null : [...key.allowedRouteIds],
    allowedOrigins: key.allowedOrigins === null ? null : [...key.allowedOrigins],
    allowedAddresses: key.allowedAddresses === null ? null : [...key.allowedAddresses],
  };
}

export function keySummary(key: KeyRow): ListKeysResponse['apiKeys'][number] {
  return {
    consumerApiKeyId: key.id,
    name: key.name,
    createdAt: isoTimestamp(key.createdAt),
    lastUpdated: isoTimestamp(key.lastUpdated),
    ...keyState(key),
  };
}

/** A key answer whose `metadata` is the stored text, members in the order the caller wrote them. */
export type WithRawMetadata<T extends { metadata: unknown }> = Omit<T, 'metadata'> & {
  readonly metadata: RawJson;
};

/**
 * The detail less `usage`, its balance holding `credits`; opens the secret with whichever configured
 * encryption key sealed it.
 */
export function keyView(
  key: KeyRow,
  credits: Credits | null,
  encryptionKeys: readonly Buffer[],
  now: Date,
): WithRawMetadata<KeyResponse> {
  const previous = key.previousSecretExpiresAt;
  return {
    consumerApiKeyId: key.id,
    name: key.name,
    secret: decryptSecret(key.secretCiphertext, encryptionKeys),
    createdAt: isoTimestamp(key.createdAt),
    lastUpdated: isoTimestamp(key.lastUpdated),
    ...keyState(key),
    metadata: new RawJson(key.metadata),
    credits,
    ...(previous !== null && previous > now && { previousSecretExpiresAt: isoTimestamp(previous) }),
    leak: key.leak,
  };
}
