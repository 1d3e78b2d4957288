import type { MeterBounds } from './meter-bounds.js';
import { QuantityTally, type QuantityPlan } from './quantity-tally.js';
import { unsettled, type Reading } from './reading.js';
import type { UnitMeter } from './unit-meter.js';

/** The units of a JSON response body: the quantities' integers, read as the body passes. */
export class JsonBodyMeter implements UnitMeter {
  private readonly tally: QuantityTally;
  private bytes = 0;

  constructor(
    quantities: QuantityPlan,
    private readonly bounds: MeterBounds,
  ) {
    this.tally = new QuantityTally(quantities);
  }

  write(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.bytes <= this.bounds.documentMaxBytes) this.tally.reader.write(chunk);
  }

  end({ complete }: { complete: boolean }): Reading {
    if (!complete) return unsettled('cut-short');
    if (this.bytes > this.bounds.documentMaxBytes) return unsettled('too-large');
    if (!this.tally.reader.end()) return unsettled('malformed');
    this.tally.take();
    return this.tally.reading(this.bounds.settleMax);
  }
}
