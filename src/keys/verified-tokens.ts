import type { TokenClaims } from './token.js';

/** A token whose signature was checked: what it says, and the signing key it was found signed with. */
export interface VerifiedToken {
  readonly claims: TokenClaims;
  readonly signingKey: Buffer;
}

/**
 * Tokens already checked, by their text: a page sends one token with every request, and this makes the
 * second and later ones cost a look-up instead of parsing it and computing an HMAC. An entry vouches
 * only together with its signing key: the caller accepts it while its key still holds that very
 * `Buffer` in force (a roll or a reload makes new ones, so the token is checked afresh). Bounded: the
 * oldest entry goes first.
 */
export class VerifiedTokens {
  private readonly byText = new Map<string, VerifiedToken>();

  constructor(private readonly maxEntries = 10_000) {}

  get(text: string): VerifiedToken | undefined {
    return this.byText.get(text);
  }

  add(text: string, verified: VerifiedToken): void {
    if (this.byText.size >= this.maxEntries) this.byText.delete(this.byText.keys().next().value!);
    this.byText.set(text, verified);
  }
}
