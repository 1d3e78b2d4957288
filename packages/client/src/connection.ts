/** Where Tollgate answers and the token to call it with (root or admin token). */
export interface TollgateConnection {
  /** Tollgate's public listener, with MANAGEMENT_PREFIX when one is set: `https://tollgate.internal`. */
  readonly baseUrl: string;
  /** For verify and the middleware, a token with `keys:verify`; for the client, the scopes its calls need. */
  readonly token: string;
}
