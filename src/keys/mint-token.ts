/**
 * Minting a short-lived token (docs/guides/browser.md, docs/decisions/0091): `tgt_<payload>.<signature>`
 * from a key's secret, without calling Tollgate. The one copy of the algorithm: the portal mints with it
 * (src/portal/api/operations.ts), the proxy derives signing keys with it (src/keys/token.ts), and
 * @tollgate/client ships it as written (packages/client/src/generated/mint-token.ts, by `npm run
 * build`), so this file imports nothing but node:crypto.
 */
import { createHmac } from 'node:crypto';

export const TOKEN_PREFIX = 'tgt_';
/** A token expires at most this long after it is minted, and is refused once `exp` is further ahead. */
export const MAX_TOKEN_LIFETIME_S = 86_400;
const DERIVATION = 'tollgate-token-v1';

export interface MintTokenOptions {
  /** The key's id (the token's `kid`). */
  readonly consumerApiKeyId: string;
  /** 1 to 86,400: Tollgate refuses a token whose expiry is more than 24 h ahead. */
  readonly expiresInSeconds: number;
  /**
   * The visitor's id (1–200 code points, no control character): its requests' customer id, in place of
   * any header the page sends. Tollgate refuses a token whose subject is longer or holds one.
   */
  readonly subject?: string;
  /** Narrows the key to these origins (their intersection with the key's `allowedOrigins`). */
  readonly origins?: readonly string[];
  /** Narrows the key to these route ids (their intersection with the key's `allowedRouteIds`). */
  readonly routes?: readonly string[];
  /** Epoch ms to mint at; default now. */
  readonly nowMs?: number;
}

/** The signing key of a secret: what a token of its key is signed with. */
export function signingKeyOf(secret: string): Buffer {
  return createHmac('sha256', secret).update(DERIVATION).digest();
}

/** A token of the key whose secret is `secret`, which Tollgate accepts wherever it accepts the key. */
export function mintToken(secret: string, options: MintTokenOptions): string {
  const { consumerApiKeyId, expiresInSeconds, subject, origins, routes, nowMs = Date.now() } = options;
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > MAX_TOKEN_LIFETIME_S)
    throw new RangeError(`expiresInSeconds must be a whole number from 1 to ${MAX_TOKEN_LIFETIME_S}`);
  const claims = {
    kid: consumerApiKeyId,
    exp: Math.floor(nowMs / 1_000) + expiresInSeconds,
    ...(subject !== undefined && { sub: subject }),
    ...(origins !== undefined && { origins }),
    ...(routes !== undefined && { routes }),
  };
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${TOKEN_PREFIX}${payload}.${createHmac('sha256', signingKeyOf(secret)).update(payload).digest('base64url')}`;
}
