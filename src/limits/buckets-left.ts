import type { BucketLimit } from './core/token-bucket.lua.js';
import { bucketPartsOf, countOf, type ConsumeReply } from './consume-reply.js';
import { bucketOf, type Span } from './limiter-groups.js';
import type { Recovery } from './recovery/recovery.js';

/**
 * Tells `recovery` each token bucket of a call (`buckets`: its span, limit and index in the call, …)
 * as the call left it at `nowMs`, with its units leased out in it, and what this replica holds of them.
 */
export function bucketsLeft(
  recovery: Recovery,
  spans: readonly Span[],
  buckets: readonly number[],
  reply: ConsumeReply,
  nowMs: number,
): void {
  for (let b = 0; b < buckets.length; b += 3) {
    const span = spans[buckets[b]!]!;
    const j = buckets[b + 1]!;
    const i = buckets[b + 2]!;
    const { parts, outstanding } = bucketPartsOf(reply, i);
    const record = bucketOf(span.limits[j]!, countOf(reply, i) - outstanding, parts, nowMs);
    recovery.bucketLeft(
      span.counts[j]!,
      span.consumeLimits[j] as BucketLimit,
      span.limits[j]!,
      record,
      span.book.outstanding,
    );
  }
}
