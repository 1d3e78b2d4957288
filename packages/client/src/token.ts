/**
 * Short-lived tokens for a web page, minted by a backend that holds a key's secret, without calling
 * Tollgate (docs/guides/browser.md): `tgt_<payload>.<signature>`.
 */
import { createHmac } from 'node:crypto';

export interface MintTokenOptions {
  /** The key's id (the token's `kid`). */
  readonly consumerApiKeyId: string;
  /** 1 to 86,400: Tollgate refuses a token whose expiry is more than 24 h ahead. */
  readonly expiresInSeconds: number;
  /** The visitor's id (1–200 characters): its requests' customer id, in place of any header the page sends. */
  readonly subject?: string;
  /** Narrows the key to these origins (their intersection with the key's `allowedOrigins`). */
  readonly origins?: readonly string[];
  /** Narrows the key to these route ids (their intersection with the key's `allowedRouteIds`). */
  readonly routes?: readonly string[];
  /** Epoch ms to mint at; default now. */
  readonly nowMs?: number;
}

/** A token of the key whose secret is `secret`, which Tollgate accepts wherever it accepts the key. */
export function mintToken(secret: string, options: MintTokenOptions): string {
  const { consumerApiKeyId, expiresInSeconds, subject, origins, routes, nowMs = Date.now() } = options;
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > 86_400)
    throw new RangeError('expiresInSeconds must be a whole number from 1 to 86400');
  const claims = {
    kid: consumerApiKeyId,
    exp: Math.floor(nowMs / 1_000) + expiresInSeconds,
    ...(subject !== undefined && { sub: subject }),
    ...(origins !== undefined && { origins }),
    ...(routes !== undefined && { routes }),
  };
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signingKey = createHmac('sha256', secret).update('tollgate-token-v1').digest();
  return `tgt_${payload}.${createHmac('sha256', signingKey).update(payload).digest('base64url')}`;
}
