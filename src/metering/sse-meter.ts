import { LeadingMark } from './byte-order-mark.js';
import type { MeterBounds } from './meter-bounds.js';
import { QuantityTally, type QuantityPlan } from './quantity-tally.js';
import { unsettled, type Reading } from './reading.js';
import type { UnitMeter } from './unit-meter.js';

// Where the parser is in a line (WHATWG HTML, "server-sent events", "interpreting an event stream").
const LINE_START = 0;
const FIELD = 1; // the field's name
const DATA_FIRST = 2; // just after `data:`, where one space is dropped
const DATA = 3;
const SKIPPED = 4; // a comment, or a field other than `data`

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const DATA_NAME = Buffer.from('data');
const LINE_FEED = Uint8Array.of(LF);

/**
 * The units of a `text/event-stream`: each event's `data` is read as JSON while it arrives (data lines
 * joined by a line feed, as the spec joins them), and the tally keeps, per quantity, the last integer
 * any event reported. Only the current event's parse state is kept, never its bytes; an event whose
 * data is not JSON (`[DONE]`, `ping` text) counts for nothing, and an event left unfinished when the
 * stream ends is dropped, as a browser drops it.
 */
export class SseMeter implements UnitMeter {
  private readonly tally: QuantityTally;
  private state = LINE_START;
  /** A byte order mark may open the stream, and is not part of the first field's name. */
  private readonly mark = new LeadingMark();
  private afterCR = false;
  private fieldLength = 0;
  private fieldIsData = true;
  private eventHasData = false;
  private eventBytes = 0;
  private tooLarge = false;

  constructor(
    quantities: QuantityPlan,
    private readonly bounds: MeterBounds,
  ) {
    this.tally = new QuantityTally(quantities);
  }

  write(chunk: Uint8Array): void {
    // Bytes that only looked like a mark's start come back through this method first.
    let at = this.mark.skip(chunk, this);
    while (at < chunk.length && !this.tooLarge) {
      const byte = chunk[at]!;
      if (this.afterCR && byte === LF) {
        this.afterCR = false;
        at++;
        continue;
      }
      this.afterCR = false;
      if (this.state === DATA_FIRST && byte !== CR && byte !== LF) {
        this.state = DATA;
        if (byte === 0x20) at++; // one space after the colon is not data
        continue;
      }
      if (this.state === DATA && byte !== CR && byte !== LF) {
        at = this.data(chunk, at);
        continue;
      }
      this.step(byte);
      at++;
    }
  }

  end({ complete }: { complete: boolean }): Reading {
    if (!complete) return unsettled('cut-short');
    if (this.tooLarge) return unsettled('too-large');
    return this.tally.reading(this.bounds.settleMax);
  }

  /** Hands the data up to the line's end to the event's reader; where the line's end is, or the chunk's. */
  private data(chunk: Uint8Array, from: number): number {
    // A loop, not indexOf: searching for CR would scan the whole rest of a chunk of many events.
    let to = from;
    while (to < chunk.length && chunk[to] !== LF && chunk[to] !== CR) to++;
    this.feed(chunk, from, to);
    return to;
  }

  /** Gives the event's reader these bytes of its data, within the event's bound. */
  private feed(bytes: Uint8Array, from: number, to: number): void {
    this.eventBytes += to - from;
    if (this.eventBytes > this.bounds.documentMaxBytes) this.tooLarge = true;
    else this.tally.reader.write(bytes, from, to);
  }

  private step(byte: number): void {
    if (byte === CR || byte === LF) {
      this.afterCR = byte === CR;
      return this.lineEnd();
    }
    switch (this.state) {
      case LINE_START:
        if (byte === COLON) return void (this.state = SKIPPED);
        this.state = FIELD;
        this.fieldLength = 0;
        this.fieldIsData = true;
        return this.fieldByte(byte);
      case FIELD:
        if (byte !== COLON) return this.fieldByte(byte);
        if (!this.isData()) return void (this.state = SKIPPED);
        this.startDataLine();
        this.state = DATA_FIRST;
        return;
    }
  }

  private fieldByte(byte: number): void {
    this.fieldIsData &&= this.fieldLength < DATA_NAME.length && byte === DATA_NAME[this.fieldLength];
    this.fieldLength++;
  }

  private isData(): boolean {
    return this.fieldIsData && this.fieldLength === DATA_NAME.length;
  }

  private startDataLine(): void {
    if (this.eventHasData) this.feed(LINE_FEED, 0, 1);
    this.eventHasData = true;
  }

  private lineEnd(): void {
    if (this.state === LINE_START) this.dispatch();
    else if (this.state === FIELD && this.isData()) this.startDataLine(); // `data` alone: empty data
    this.state = LINE_START;
  }

  /** A blank line: the event is whole. */
  private dispatch(): void {
    if (this.eventHasData && this.tally.reader.end()) this.tally.take();
    this.tally.reader.reset();
    this.eventHasData = false;
    this.eventBytes = 0;
  }
}
