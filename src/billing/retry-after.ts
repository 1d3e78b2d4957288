/** The longest wait a receiver's Retry-After imposes: a bogus date never stops an export for days. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * The wait a `Retry-After` header asks for (RFC 9110 §10.2.3: delay-seconds or an HTTP-date, read
 * against `nowMs`), at most an hour; undefined when there is none or it cannot be read.
 */
export function retryAfterMs(header: string | string[] | undefined, nowMs: number): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === '') return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - nowMs;
  if (Number.isNaN(ms)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}
