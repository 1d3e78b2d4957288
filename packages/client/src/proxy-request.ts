/**
 * How the proxy reads a request, for the middleware to read it alike: the same credential, the same
 * customer id and the same path reach verify as would reach the proxy's admission and usage. Mirrors
 * src/proxy/credential.ts, customerIdOf in src/proxy/forwarding-headers.ts and isCleanCustomerId in
 * src/plans/customer-id.ts;
 * tests/e2e/client-middleware.test.ts holds both to the same answers.
 */
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The client's credential: `Authorization: Bearer <secret>`, else `x-api-key`. `undefined` when neither
 * is present; an empty string when one is present but can't carry a secret (empty bearer, another
 * scheme, a repeated header), which verify refuses as invalid, as the proxy does.
 */
export function credentialOf(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined && authorization.slice(0, 7).toLowerCase() === 'bearer ') {
    return authorization.slice(7).trim();
  }
  const apiKey = headers['x-api-key'];
  if (apiKey !== undefined) return typeof apiKey === 'string' ? apiKey.trim() : '';
  return authorization === undefined ? undefined : '';
}

const NON_ASCII = /[\x80-\xff]/;
// eslint-disable-next-line no-control-regex -- the characters the proxy refuses in a customer id
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether a customer id holds a control character, which the proxy refuses (400 `invalid_customer_id`). */
export const hasControlCharacter = (customerId: string): boolean => CONTROL.test(customerId);

/**
 * The customer-id header's value; absent or empty: none. Node reads header bytes as Latin-1; clients
 * send UTF-8, so a value beyond ASCII is read again as UTF-8, as the proxy reads it.
 */
export function customerIdOf(headers: IncomingHttpHeaders, header: string): string | undefined {
  const value = headers[header];
  if (typeof value !== 'string' || value === '') return undefined;
  return NON_ASCII.test(value) ? Buffer.from(value, 'latin1').toString('utf8') : value;
}

/** The path of a request target, without the query: what usage files the request under. */
export function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
