import { createHash } from 'node:crypto';

/**
 * The id a receiver dedupes one revision of one bucket by (Stripe's `identifier`, Lago's
 * `transaction_id`, a CloudEvent's `id`): derived from (export, subject, bucket start, revision), so a
 * retry of the same send carries the same id whichever replica sends it, and a correction (the next
 * revision) a new one. Shaped as a UUID (version 8: SHA-256 based), which every receiver accepts, within
 * Stripe's 100 characters.
 */
export function idempotencyId(
  exportId: string,
  subjectId: string,
  bucketStartMs: number,
  revision: number,
): string {
  const hex = createHash('sha256')
    .update(`${exportId}\n${subjectId}\n${bucketStartMs}\n${revision}`)
    .digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
