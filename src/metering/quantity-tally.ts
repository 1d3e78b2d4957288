import { JsonIntegerReader, PointerSet } from './json-integer-reader.js';
import { settled, unsettled, type Reading } from './reading.js';
import type { Quantity } from './settle-rule.js';

/** A rule's quantities made ready once for every response read by it: their pointers as one set. */
export class QuantityPlan {
  readonly pointers: PointerSet;
  /** Per pointer of the set, the quantity it reports. */
  readonly quantityOf: readonly number[];
  /** Per quantity, whether it counts 0 when never seen. */
  readonly optional: readonly boolean[];
  /** A tally's start, one per quantity: copied, not built, for each response. */
  readonly unseen: readonly undefined[];

  constructor(quantities: readonly Quantity[]) {
    this.pointers = new PointerSet(quantities.flatMap((quantity) => quantity.pointers));
    this.quantityOf = quantities.flatMap((quantity, index) => quantity.pointers.map(() => index));
    this.optional = quantities.map((quantity) => quantity.optional === true);
    this.unseen = quantities.map(() => undefined);
  }
}

/**
 * The last integer seen of each quantity, over one JSON document or the events of a stream, and the
 * units they add up to. Every quantity but an optional one must have been seen: a partial sum would
 * charge too little.
 */
export class QuantityTally {
  /** Reads the pointers of all quantities in one document; `take` keeps what it found. */
  readonly reader: JsonIntegerReader;
  private readonly last: (number | undefined)[];

  constructor(private readonly plan: QuantityPlan) {
    this.reader = new JsonIntegerReader(plan.pointers);
    this.last = plan.unseen.slice();
  }

  /** Takes what the reader found in a whole document: per quantity, the last of its pointers found. */
  take(): void {
    const { found, foundAt } = this.reader;
    const quantityOf = this.plan.quantityOf;
    for (let quantity = 0; quantity < this.last.length; quantity++) {
      let latest = 0;
      for (let pointer = 0; pointer < found.length; pointer++) {
        const value = found[pointer];
        if (quantityOf[pointer] !== quantity || value === undefined || foundAt[pointer]! < latest) continue;
        latest = foundAt[pointer]!;
        this.last[quantity] = value;
      }
    }
  }

  reading(settleMax: number): Reading {
    let sum = 0;
    for (let quantity = 0; quantity < this.last.length; quantity++) {
      const value = this.last[quantity];
      if (value !== undefined) sum += value;
      else if (!this.plan.optional[quantity]) return unsettled('not-reported');
    }
    return settled(sum, settleMax);
  }
}
