import type { JsonPointer } from '../plans/json-pointer.js';

// States of the reader, one byte at a time.
const VALUE = 0; // a value is due
const FIRST_ELEMENT = 1; // after `[`: a value or `]`
const FIRST_KEY = 2; // after `{`: a key or `}`
const KEY = 3; // after `,` in an object
const COLON = 4;
const AFTER_VALUE = 5; // `,` or the container's close
const STRING = 6;
const ESCAPE = 7;
const HEX = 8;
const NUMBER = 9;
const LITERAL = 10;
const DONE = 11; // the document is whole: only white space may follow
const FAILED = 12;

// Number sub-states (RFC 8259's grammar); the number may end in the ones marked.
const AFTER_MINUS = 0;
const ZERO = 1; // may end
const DIGITS = 2; // may end
const POINT = 3;
const FRACTION = 4; // may end
const EXPONENT_MARK = 5;
const EXPONENT_SIGN = 6;
const EXPONENT = 7; // may end
const MAY_END = new Set([ZERO, DIGITS, FRACTION, EXPONENT]);

const OBJECT = 0;
const ARRAY = 1;
/** Deeper than any usage report nests; deeper documents are not read (memory stays bounded). */
const MAX_DEPTH = 256;
/** Integers are kept to here; every cap on units is far below. */
const INTEGER_CEILING = Number.MAX_SAFE_INTEGER;
const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];
const HEX_DIGIT = /^[0-9a-fA-F]$/;

const isSpace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
const isDigit = (byte: number) => byte >= 0x30 && byte <= 0x39;

/**
 * The pointers a reader follows, made ready once for every reader of them (a cost entry's rule reads
 * many responses): each token in UTF-8, to match a key without decoding it, and the room a key needs.
 */
export class PointerSet {
  readonly tokenBytes: readonly (readonly Buffer[])[];
  /** A key is escaped at most 6 bytes a character (\uXXXX): longer ones match no token. */
  readonly keyRoom: number;
  readonly allMask: number;
  /** A reader's start, one per pointer, copied for each document: nothing found, at no time. */
  readonly unfound: readonly undefined[];
  readonly neverFound: readonly number[];

  constructor(readonly pointers: readonly JsonPointer[]) {
    if (pointers.length > 31) throw new RangeError('at most 31 pointers');
    this.allMask = 2 ** pointers.length - 1;
    this.unfound = pointers.map(() => undefined);
    this.neverFound = pointers.map(() => 0);
    this.tokenBytes = pointers.map((pointer) => pointer.map((token) => Buffer.from(token)));
    this.keyRoom = Math.max(0, ...this.tokenBytes.flat().map((token) => token.length)) * 6 + 2;
  }
}

/**
 * One JSON document read as it arrives, in chunks split anywhere, that keeps only the non-negative
 * integers (no fraction, no exponent) at up to 31 pointers: it checks the whole document is well
 * formed, follows only the members and elements on a pointer's way, and decodes no other key or value.
 * Its memory is bounded whatever the document (a bit per level, a key as long as the longest token).
 * One is made per response, so it allocates only what a document uses: its per-level arrays grow with
 * the depth reached (typed arrays of MAX_DEPTH each cost more to make than the reading).
 */
export class JsonIntegerReader {
  /** The last integer found at each pointer, and when (a count of finds), for "the last one seen". */
  readonly found: (number | undefined)[];
  readonly foundAt: number[];
  private finds = 0;
  private state = VALUE;
  private depth = 0;
  private readonly kinds: number[] = [];
  /** Per open container: the pointers that pass through it (a bit each), and its element count. */
  private readonly masks: number[] = [];
  private readonly indices: number[] = [];
  private valueMask: number;
  private stringIsKey = false;
  /** The key being read, as written (escapes undecoded), while it may still match a token. */
  private readonly keyBytes: number[] = [];
  private keyLength = 0;
  private keyEscaped = false;
  private keyOverflow = false;
  private readonly pointers: readonly JsonPointer[];
  private hexLeft = 0;
  private numberState = AFTER_MINUS;
  private numberNegative = false;
  private numberValue = 0;
  private literal = LITERALS[0]!;
  private literalAt = 0;

  constructor(private readonly set: PointerSet) {
    this.pointers = set.pointers;
    this.valueMask = set.allMask;
    this.found = set.unfound.slice();
    this.foundAt = set.neverFound.slice();
  }

  /** Starts over for another document (the next event of a stream), forgetting what was found. */
  reset(): void {
    this.found.fill(undefined);
    this.foundAt.fill(0);
    this.finds = 0;
    this.state = VALUE;
    this.depth = 0;
    this.valueMask = this.set.allMask;
  }

  write(chunk: Uint8Array, start = 0, end = chunk.length): void {
    for (let at = start; at < end && this.state !== FAILED; at++) {
      if (this.state === STRING) at = this.stringRun(chunk, at, end);
      if (at < end) this.step(chunk[at]!);
    }
  }

  /** Whether what was written is one whole, well-formed JSON document. */
  end(): boolean {
    if (this.state === NUMBER && this.depth === 0) this.endNumber();
    return this.state === DONE;
  }

  /**
   * Takes at once the bytes of a string that need no look (neither `"`, `\` nor a control byte),
   * keeping a key's, so that most of a document never goes through `step`; where such a byte is.
   */
  private stringRun(chunk: Uint8Array, at: number, end: number): number {
    const keep = this.stringIsKey;
    while (at < end) {
      const byte = chunk[at]!;
      if (byte === 0x22 || byte === 0x5c || byte < 0x20) break;
      if (keep) this.keepKeyByte(byte);
      at++;
    }
    return at;
  }

  private step(byte: number): void {
    switch (this.state) {
      case VALUE:
        return this.startValue(byte);
      case FIRST_ELEMENT:
        if (isSpace(byte)) return;
        if (byte === 0x5d) return this.close(ARRAY);
        this.valueMask = this.childMask('0');
        return this.startValue(byte);
      case FIRST_KEY:
        if (isSpace(byte)) return;
        if (byte === 0x7d) return this.close(OBJECT);
        return this.startKey(byte);
      case KEY:
        if (isSpace(byte)) return;
        return this.startKey(byte);
      case COLON:
        if (isSpace(byte)) return;
        if (byte !== 0x3a) return this.fail();
        this.valueMask = this.keyMask();
        this.state = VALUE;
        return;
      case AFTER_VALUE:
        return this.afterValue(byte);
      case STRING:
        return this.stringByte(byte);
      case ESCAPE:
        if (byte === 0x75) {
          this.hexLeft = 4;
          this.state = HEX;
        } else if ('"\\/bfnrt'.includes(String.fromCharCode(byte))) {
          this.state = STRING;
        } else {
          return this.fail();
        }
        return this.keepKeyByte(byte);
      case HEX:
        if (!HEX_DIGIT.test(String.fromCharCode(byte))) return this.fail();
        if (--this.hexLeft === 0) this.state = STRING;
        return this.keepKeyByte(byte);
      case NUMBER:
        return this.numberByte(byte);
      case LITERAL:
        if (byte !== this.literal[this.literalAt]) return this.fail();
        if (++this.literalAt === this.literal.length) this.valueDone();
        return;
      case DONE:
        if (!isSpace(byte)) this.fail();
        return;
    }
  }

  private startValue(byte: number): void {
    if (isSpace(byte)) return;
    if (byte === 0x7b || byte === 0x5b) return this.open(byte === 0x7b ? OBJECT : ARRAY);
    if (byte === 0x22) {
      this.stringIsKey = false;
      this.state = STRING;
      return;
    }
    if (byte === 0x2d || isDigit(byte)) {
      this.state = NUMBER;
      this.numberNegative = byte === 0x2d;
      this.numberState = byte === 0x2d ? AFTER_MINUS : byte === 0x30 ? ZERO : DIGITS;
      this.numberValue = byte === 0x2d ? 0 : byte - 0x30;
      return;
    }
    const literal = LITERALS.find((word) => word[0] === byte);
    if (!literal) return this.fail();
    this.literal = literal;
    this.literalAt = 1;
    this.state = LITERAL;
  }

  private open(kind: number): void {
    if (this.depth === MAX_DEPTH) return this.fail();
    this.kinds[this.depth] = kind;
    this.masks[this.depth] = this.passingMask(this.valueMask, this.depth);
    this.indices[this.depth] = 0;
    this.depth++;
    this.state = kind === OBJECT ? FIRST_KEY : FIRST_ELEMENT;
  }

  private close(kind: number): void {
    if (this.kinds[this.depth - 1] !== kind) return this.fail();
    this.depth--;
    this.valueDone();
  }

  private valueDone(): void {
    this.state = this.depth === 0 ? DONE : AFTER_VALUE;
  }

  private afterValue(byte: number): void {
    if (isSpace(byte)) return;
    const kind = this.kinds[this.depth - 1];
    if (byte === 0x2c) {
      if (kind === OBJECT) {
        this.state = KEY;
        return;
      }
      const index = ++this.indices[this.depth - 1]!;
      this.valueMask = this.masks[this.depth - 1] === 0 ? 0 : this.childMask(String(index));
      this.state = VALUE;
      return;
    }
    if (byte === 0x7d || byte === 0x5d) return this.close(byte === 0x7d ? OBJECT : ARRAY);
    this.fail();
  }

  private startKey(byte: number): void {
    if (byte !== 0x22) return this.fail();
    this.stringIsKey = true;
    this.keyLength = 0;
    this.keyEscaped = false;
    this.keyOverflow = this.masks[this.depth - 1] === 0; // no pointer passes: no need to decode
    this.state = STRING;
  }

  private stringByte(byte: number): void {
    if (byte < 0x20) return this.fail();
    if (byte === 0x22) {
      if (!this.stringIsKey) return this.valueDone();
      this.state = COLON;
      return;
    }
    if (byte === 0x5c) {
      this.state = ESCAPE;
      this.keyEscaped = true;
    }
    this.keepKeyByte(byte);
  }

  private keepKeyByte(byte: number): void {
    if (!this.stringIsKey || this.keyOverflow) return;
    if (this.keyLength === this.set.keyRoom) this.keyOverflow = true;
    else this.keyBytes[this.keyLength++] = byte;
  }

  /** The pointers the member whose key was just read is on the way of. */
  private keyMask(): number {
    if (this.keyOverflow) return 0;
    // Most keys have no escape: their bytes are compared with the tokens' as they are.
    if (!this.keyEscaped) return this.childMask(this.keyBytes);
    const key = Buffer.from(this.keyBytes.slice(0, this.keyLength)).toString('utf8');
    return this.childMask(JSON.parse(`"${key}"`) as string);
  }

  private numberByte(byte: number): void {
    const digit = isDigit(byte);
    switch (this.numberState) {
      case AFTER_MINUS:
        if (!digit) return this.fail();
        this.numberState = byte === 0x30 ? ZERO : DIGITS;
        return;
      case ZERO:
      case DIGITS:
        if (digit && this.numberState === DIGITS) {
          this.numberValue = Math.min(this.numberValue * 10 + (byte - 0x30), INTEGER_CEILING);
          return;
        }
        if (byte === 0x2e) return void (this.numberState = POINT);
        if (byte === 0x65 || byte === 0x45) return void (this.numberState = EXPONENT_MARK);
        break;
      case POINT:
      case FRACTION:
        if (digit) return void (this.numberState = FRACTION);
        if (this.numberState === FRACTION && (byte === 0x65 || byte === 0x45)) {
          return void (this.numberState = EXPONENT_MARK);
        }
        break;
      case EXPONENT_MARK:
        if (byte === 0x2b || byte === 0x2d) return void (this.numberState = EXPONENT_SIGN);
        if (digit) return void (this.numberState = EXPONENT);
        return this.fail();
      case EXPONENT_SIGN:
      case EXPONENT:
        if (digit) return void (this.numberState = EXPONENT);
        break;
    }
    if (!MAY_END.has(this.numberState)) return this.fail();
    this.endNumber();
    this.step(byte); // the byte after a number belongs to what follows it
  }

  private endNumber(): void {
    if (!MAY_END.has(this.numberState)) return this.fail();
    const integer = !this.numberNegative && (this.numberState === ZERO || this.numberState === DIGITS);
    const targets = this.targetMask(this.valueMask, this.depth);
    if (integer && targets !== 0) {
      this.finds++;
      for (let i = 0; i < this.pointers.length; i++) {
        if (targets & (1 << i)) {
          this.found[i] = this.numberValue;
          this.foundAt[i] = this.finds;
        }
      }
    }
    this.valueDone();
  }

  /** Of the pointers passing through the innermost container, those whose next token is `name`. */
  private childMask(name: string | number[]): number {
    // `name`: a key decoded, or `keyBytes` when the key as written is the same (no escape in it).
    const level = this.depth - 1;
    const passing = this.masks[level]!;
    let mask = 0;
    for (let i = 0; i < this.pointers.length; i++) {
      if (!(passing & (1 << i))) continue;
      const hit =
        typeof name === 'string'
          ? this.pointers[i]![level] === name
          : this.isKey(this.set.tokenBytes[i]![level]!);
      if (hit) mask |= 1 << i;
    }
    return mask;
  }

  /** Whether the key as written (`keyBytes`) is `token`. */
  private isKey(token: Buffer): boolean {
    if (token.length !== this.keyLength) return false;
    for (let at = 0; at < token.length; at++) if (token[at] !== this.keyBytes[at]) return false;
    return true;
  }

  /** Of `mask`'s pointers, those that go deeper than `level` tokens. */
  private passingMask(mask: number, level: number): number {
    let passing = 0;
    for (let i = 0; i < this.pointers.length; i++) {
      if (mask & (1 << i) && this.pointers[i]!.length > level) passing |= 1 << i;
    }
    return passing;
  }

  /** Of `mask`'s pointers, those that end at `level` tokens: they point at the value there. */
  private targetMask(mask: number, level: number): number {
    return mask & ~this.passingMask(mask, level);
  }

  private fail(): void {
    this.state = FAILED;
  }
}
