import { randomFillSync } from 'node:crypto';
import type { IdGenerator } from '@opentelemetry/sdk-trace';

/** Random bytes drawn at once: ids for 256 requests per draw. */
const POOL_BYTES = 24 * 256;

/**
 * Trace and span ids, for the SDK's tracer and for the proxy's own request spans, from a pool of
 * random bytes refilled a few kilobytes at a time: one hex conversion per id, no per-id call for
 * randomness.
 */
export class PooledIds implements IdGenerator {
  private readonly pool = Buffer.allocUnsafe(POOL_BYTES);
  private offset = POOL_BYTES;

  /** `bytes` random bytes as lowercase hex; never all zeros (an invalid id). */
  hex(bytes: number): string {
    if (this.offset + bytes > POOL_BYTES) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const start = this.offset;
    this.offset += bytes;
    for (let i = start; i < start + bytes; i++)
      if (this.pool[i] !== 0) return this.pool.toString('hex', start, start + bytes);
    return this.hex(bytes);
  }

  generateTraceId(): string {
    return this.hex(16);
  }

  generateSpanId(): string {
    return this.hex(8);
  }
}
