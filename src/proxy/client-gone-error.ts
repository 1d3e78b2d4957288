import type { ResolvedKey } from '../keys/key-cache.js';

/**
 * Why a request's admission ended undecided: its client went away while its body was read to decide
 * on it. It carries whom usage counts the request for, as a refusal carries its key.
 */
export class ClientGoneError extends Error {
  constructor(
    readonly key: ResolvedKey,
    /** The customer id counted: a token's `sub` in place of the client's. */
    readonly customerId: string | undefined,
  ) {
    super('the client went away while its body was read');
  }
}
