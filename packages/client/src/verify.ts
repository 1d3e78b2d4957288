import type { TollgateConnection } from './connection.js';
import type { VerifyAnswer, VerifyRequest } from './verify-types.js';

export const VERIFY_PATH = '/tollgate/verify';

/** Verify itself failed (wrong token, a bad request, Tollgate unavailable): no decision was made. */
export class TollgateVerifyError extends Error {
  constructor(
    /** The status verify answered; not `status`, which Express and Fastify would answer the end client with. */
    readonly httpStatus: number,
    /** The error envelope's `code`, or `http_error` when the answer was not Tollgate's. */
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'TollgateVerifyError';
  }

  /** The error of a call Tollgate answered `status` with `text` (its error envelope, or anything else). */
  static of(status: number, text: string): TollgateVerifyError {
    try {
      const { code, error } = JSON.parse(text) as { code?: unknown; error?: unknown };
      if (typeof code === 'string' && typeof error === 'string')
        return new TollgateVerifyError(status, code, error);
    } catch {
      // Not Tollgate's envelope (a load balancer answered): the status says enough.
    }
    return new TollgateVerifyError(status, 'http_error', `verify answered HTTP ${status}`);
  }
}

/**
 * Decides a request exactly as the proxy would, without forwarding it (docs/guides/verify-and-client.md): an
 * admitted one is counted in the key's usage and limits. Refusals are answers (`valid: false`), not errors.
 */
export async function verifyKey(
  connection: TollgateConnection,
  request: VerifyRequest,
): Promise<VerifyAnswer> {
  const response = await fetch(connection.baseUrl.replace(/\/+$/, '') + VERIFY_PATH, {
    method: 'POST',
    headers: { authorization: `Bearer ${connection.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(request),
  });
  const text = await response.text();
  if (response.status !== 200) throw TollgateVerifyError.of(response.status, text);
  return JSON.parse(text) as VerifyAnswer;
}
