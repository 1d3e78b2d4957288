import { randomFillSync } from 'node:crypto';
import type { IdGenerator } from '@opentelemetry/sdk-trace';

/** Random bytes drawn at once: ids for 256 requests per draw. */
const POOL_BYTES = 24 * 256;

/**
 * Trace and span ids, as the SDK's tracer asks for them and as Tollgate's request path does, from a
 * pool of random bytes refilled a few kilobytes at a time: one hex conversion per id, no per-id call
 * for randomness. The next trace id can be chosen: Tollgate samples a request on a trace id before
 * it starts a span (so one left out builds none), and the root span it then starts must carry that id.
 */
export class ChosenTraceIds implements IdGenerator {
  private readonly pool = Buffer.allocUnsafe(POOL_BYTES);
  private offset = POOL_BYTES;
  private chosen: string | undefined = undefined;

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

  /** The trace id the tracer's next root span takes. */
  chooseTraceId(traceId: string): void {
    this.chosen = traceId;
  }

  generateTraceId(): string {
    const chosen = this.chosen;
    if (chosen === undefined) return this.hex(16);
    this.chosen = undefined;
    return chosen;
  }

  generateSpanId(): string {
    return this.hex(8);
  }
}
