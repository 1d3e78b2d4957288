const MARK = Uint8Array.of(0xef, 0xbb, 0xbf);
/** The body's start is behind: no mark to look for. */
const PAST = MARK.length + 1;

/**
 * One UTF-8 byte order mark left out at the start of a body read in chunks cut anywhere, as its
 * clients leave it out: an event stream's parser (the WHATWG spec strips it) and a JSON answer's
 * (`response.json()` decodes the text as UTF-8, which drops it).
 */
export class LeadingMark {
  /** How many of the mark's bytes the body started with so far, or PAST. */
  private matched = 0;

  /**
   * Where `chunk`'s bytes after the mark start. Bytes held back as a mark's start that turn out to be
   * none are written to `reader` first, once the start is behind: it must still read them.
   */
  skip(chunk: Uint8Array, reader: { write(bytes: Uint8Array): void }): number {
    if (this.matched === PAST) return 0;
    let at = 0;
    for (; this.matched < MARK.length && at < chunk.length; at++, this.matched++) {
      if (chunk[at] === MARK[this.matched]) continue;
      const held = this.matched;
      this.matched = PAST;
      if (held > 0) reader.write(MARK.subarray(0, held));
      return at;
    }
    if (this.matched === MARK.length) this.matched = PAST;
    return at;
  }
}
