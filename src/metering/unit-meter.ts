import type { Reading } from './reading.js';

/** Response headers or trailers as node:http and undici give them (names in lower case). */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Reads the units a backend reports from its response, beside the stream: the forwarding handler
 * gives each chunk to the client first and to `write` once it is sent. `write` keeps no reference to
 * the chunk, never throws and never waits, so it cannot hold up a chunk; `end` answers once.
 */
export interface UnitMeter {
  write(chunk: Uint8Array): void;
  /** `complete`: the response's last byte arrived (false: cut short). */
  end(ending: { complete: boolean; trailers?: HeaderBag }): Reading;
}
