import { LeadingMark } from './byte-order-mark.js';
import type { MeterBounds } from './meter-bounds.js';
import { QuantityTally, type QuantityPlan } from './quantity-tally.js';
import { unsettled, type Reading } from './reading.js';
import type { UnitMeter } from './unit-meter.js';

/**
 * The units of a JSON response body: the quantities' integers, read as the body passes, after one
 * UTF-8 byte order mark, which the clients reading it skip.
 */
export class JsonBodyMeter implements UnitMeter {
  private readonly tally: QuantityTally;
  private bytes = 0;
  private readonly mark = new LeadingMark();

  constructor(
    quantities: QuantityPlan,
    private readonly bounds: MeterBounds,
  ) {
    this.tally = new QuantityTally(quantities);
  }

  write(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.bytes <= this.bounds.documentMaxBytes)
      this.tally.reader.write(chunk, this.mark.skip(chunk, this.tally.reader));
  }

  end({ complete }: { complete: boolean }): Reading {
    if (!complete) return unsettled('cut-short');
    if (this.bytes > this.bounds.documentMaxBytes) return unsettled('too-large');
    if (!this.tally.reader.end()) return unsettled('malformed');
    this.tally.take();
    return this.tally.reading(this.bounds.settleMax);
  }
}
