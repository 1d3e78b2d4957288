/**
 * A secret pasted with what surrounded it where it was copied from (`Bearer tg_…`, `"tg_…"`,
 * `x-api-key: tg_…`) is still a secret: the key search finds it anywhere in the field, so it is looked
 * up in a request body and never becomes a name filter in the address, the history or a server's log.
 */

const SECRET_CHARACTER = '[A-Za-z0-9_-]';
/**
 * A whole secret as create and roll hand them out (its prefix and 36 base62 characters, or `tg_` and
 * 43 base64url ones before checksums: docs/guides/leaked-keys.md), not part of a longer run of its
 * characters.
 */
const WHOLE_SECRET = new RegExp(
  `(?<!${SECRET_CHARACTER})(?:[a-z0-9_]{1,15}_[0-9A-Za-z]{36}|tg_${SECRET_CHARACTER}{43})(?!${SECRET_CHARACTER})`,
);
/** Enough of one to be a secret cut short or run on: no key name looks like this. */
const SECRET_LIKE = new RegExp(`tg_${SECRET_CHARACTER}{16,}`);

export type PastedSecret =
  | { readonly kind: 'secret'; readonly secret: string }
  | { readonly kind: 'partial' }
  | { readonly kind: 'none' };

export function pastedSecret(text: string): PastedSecret {
  const whole = WHOLE_SECRET.exec(text);
  if (whole) return { kind: 'secret', secret: whole[0] };
  return SECRET_LIKE.test(text) ? { kind: 'partial' } : { kind: 'none' };
}
