/**
 * A webhook's signing secret, in the Standard Webhooks form `whsec_<base64>`: the HMAC-SHA256 key is
 * the decoded base64 part (32 random bytes), as every Standard Webhooks library reads it.
 */
import { randomBytes } from 'node:crypto';

export const SIGNING_SECRET_PREFIX = 'whsec_';

export function generateSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString('base64');
}
