/**
 * Where a key may be used from (docs/guides/keys.md, docs/guides/browser.md): its `allowedOrigins`
 * and `allowedAddresses`, compiled once when the key enters the key cache, so that the request path
 * matches them from memory with no I/O.
 */
import type { RefusalCode } from '../refusals.js';
import { addressMatcher, type AddressMatcher } from '../net/address-blocks.js';
import { originMatcher, refererOrigin, type OriginMatcher } from '../plans/origins.js';

export interface KeyRestrictions {
  /** null: any origin. */
  readonly origins: OriginMatcher | null;
  /** null: any client address. */
  readonly addresses: AddressMatcher | null;
}

/** The key's restrictions; undefined when it has none (the common case costs one comparison). */
export function restrictionsOf(key: {
  readonly allowedOrigins: readonly string[] | null;
  readonly allowedAddresses: readonly string[] | null;
}): KeyRestrictions | undefined {
  if (key.allowedOrigins === null && key.allowedAddresses === null) return undefined;
  return {
    origins: key.allowedOrigins === null ? null : originMatcher(key.allowedOrigins),
    addresses: key.allowedAddresses === null ? null : addressMatcher(key.allowedAddresses),
  };
}

/**
 * The refusal of a request the key may not make from where it comes: its `Origin`, else its
 * `Referer`'s origin (a browser may leave out `Origin` on a plain GET), and its client address in
 * canonical form. What is unknown is refused when the key is restricted on it.
 */
export function restrictionRefusal(
  restrictions: KeyRestrictions,
  page: { readonly origin: string | undefined; readonly referer?: string },
  client: string | undefined,
): RefusalCode | undefined {
  const { origins, addresses } = restrictions;
  if (origins !== null) {
    const origin = page.origin ?? refererOrigin(page.referer);
    if (origin === undefined || !origins(origin)) return 'origin_not_allowed';
  }
  if (addresses !== null && (client === undefined || !addresses(client))) return 'address_not_allowed';
  return undefined;
}
