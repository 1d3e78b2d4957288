/**
 * Short-lived tokens (docs/guides/browser.md, docs/decisions/0091): `tgt_<payload>.<signature>`, minted
 * by a backend from a key's secret without calling Tollgate. `payload` is base64url (no padding) of the
 * UTF-8 JSON `{kid, exp, sub?, origins?, routes?}`, `signature` base64url of HMAC-SHA256 over the
 * payload's text with the key's signing key, itself HMAC-SHA256(key = secret, "tollgate-token-v1")
 * (src/keys/mint-token.ts mints them). Pure: the key cache keeps each key's signing keys, the admission
 * checks expiry against its clock.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { codePointLength, isCleanCustomerId, MAX_CUSTOMER_ID_LENGTH } from '../plans/customer-id.js';
import { ORIGIN_PATTERN, originMatcher, type OriginMatcher } from '../plans/origins.js';

import { TOKEN_PREFIX } from './mint-token.js';

export { MAX_TOKEN_LIFETIME_S, signingKeyOf, TOKEN_PREFIX } from './mint-token.js';

/** A longer credential is no token (docs/guides/browser.md): the cap bounds the work an unknown one costs. */
export const MAX_TOKEN_LENGTH = 2_048;
/** Clocks of the minting backend and of Tollgate differ: an expired token works this much longer. */
export const TOKEN_LEEWAY_S = 30;
const MAX_TOKEN_ORIGINS = 50;
const ORIGIN = new RegExp(ORIGIN_PATTERN);
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** A SHA-256 HMAC, base64url without padding. */
const SIGNATURE_LENGTH = 43;

/** What a well-formed token says; its signature is checked against the key it names (`signedWith`). */
export interface TokenClaims {
  readonly kid: string;
  /** Epoch seconds. */
  readonly exp: number;
  /** The visitor: the customer id of its requests; undefined: none. */
  readonly sub: string | undefined;
  /** The origins the token narrows its key to; undefined: the key's. */
  readonly origins: OriginMatcher | undefined;
  /** The routes the token narrows its key to; undefined: the key's. */
  readonly routes: ReadonlySet<string> | undefined;
  readonly payload: string;
  readonly signature: Buffer;
}

const isStringList = (value: unknown, max: number): value is string[] =>
  Array.isArray(value) &&
  value.length >= 1 &&
  value.length <= max &&
  value.every((v) => typeof v === 'string' && v.length > 0 && v.length <= 200);

/** The claims of a credential that is a well-formed token; undefined for anything else. */
export function parseToken(credential: string): TokenClaims | undefined {
  if (credential.length > MAX_TOKEN_LENGTH || !credential.startsWith(TOKEN_PREFIX)) return undefined;
  const dot = credential.indexOf('.', TOKEN_PREFIX.length);
  if (dot < 0) return undefined;
  const payload = credential.slice(TOKEN_PREFIX.length, dot);
  const signature = credential.slice(dot + 1);
  if (!BASE64URL.test(payload) || signature.length !== SIGNATURE_LENGTH || !BASE64URL.test(signature))
    return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    // A payload that is not JSON is a credential that is no token: refused as invalid, not a failure.
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return undefined;
  const { kid, exp, sub, origins, routes } = claims as Record<string, unknown>;
  if (typeof kid !== 'string' || kid === '' || !Number.isSafeInteger(exp)) return undefined;
  // The subject is a customer id: it goes to the backend in a header and to usage (plans/customer-id.ts).
  if (
    sub !== undefined &&
    (typeof sub !== 'string' ||
      sub === '' ||
      codePointLength(sub) > MAX_CUSTOMER_ID_LENGTH ||
      !isCleanCustomerId(sub))
  )
    return undefined;
  if (
    origins !== undefined &&
    !(isStringList(origins, MAX_TOKEN_ORIGINS) && origins.every((o) => ORIGIN.test(o)))
  )
    return undefined;
  if (routes !== undefined && !isStringList(routes, 100)) return undefined;
  return {
    kid,
    exp: exp as number,
    sub,
    origins: origins === undefined ? undefined : originMatcher(origins),
    routes: routes === undefined ? undefined : new Set(routes),
    payload,
    signature: Buffer.from(signature, 'base64url'),
  };
}

/** Whether the token was signed with `signingKey`, compared in constant time. */
export function signedWith(claims: TokenClaims, signingKey: Buffer): boolean {
  const expected = createHmac('sha256', signingKey).update(claims.payload).digest();
  return claims.signature.length === expected.length && timingSafeEqual(claims.signature, expected);
}
