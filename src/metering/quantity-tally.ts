import { JsonIntegerReader } from './json-integer-reader.js';
import { settled, unsettled, type Reading } from './reading.js';
import type { Quantity } from './settle-rule.js';

/**
 * The last integer seen of each quantity, over one JSON document or the events of a stream, and the
 * units they add up to. Every quantity must have been seen: a partial sum would charge too little.
 */
export class QuantityTally {
  /** Reads the pointers of all quantities in one document; `take` keeps what it found. */
  readonly reader: JsonIntegerReader;
  private readonly quantityOf: number[];
  private readonly last: (number | undefined)[];

  constructor(quantities: readonly Quantity[]) {
    this.reader = new JsonIntegerReader(quantities.flat());
    this.quantityOf = quantities.flatMap((quantity, index) => quantity.map(() => index));
    this.last = quantities.map(() => undefined);
  }

  /** Takes what the reader found in a whole document: per quantity, the last of its pointers found. */
  take(): void {
    const reader = this.reader;
    const latest = this.last.map(() => 0);
    reader.found.forEach((value, pointer) => {
      const quantity = this.quantityOf[pointer]!;
      if (value === undefined || reader.foundAt[pointer]! < latest[quantity]!) return;
      latest[quantity] = reader.foundAt[pointer]!;
      this.last[quantity] = value;
    });
  }

  reading(settleMax: number): Reading {
    if (this.last.some((value) => value === undefined)) return unsettled('not-reported');
    return settled(
      this.last.reduce<number>((sum, value) => sum + value!, 0),
      settleMax,
    );
  }
}
