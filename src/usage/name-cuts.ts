import { MAX_ENDPOINT_LENGTH } from './usage.js';

/** The percent-escapes a path ends with. */
const TRAILING_ESCAPES = /(?:%[0-9A-Fa-f]{2})+$/;

/** Bytes of the UTF-8 sequence a lead byte starts. */
const sequenceLength = (lead: number) => (lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2);
const isContinuation = (byte: number) => (byte & 0xc0) === 0x80;

/**
 * A path cut to MAX_ENDPOINT_LENGTH characters at a whole character: never inside a percent-escape
 * (`…%F0%9F%`), nor between the escapes of one UTF-8 character (`…%F0%9F`), so what is kept decodes.
 */
export function cutEndpoint(path: string): string {
  if (path.length <= MAX_ENDPOINT_LENGTH) return path;
  let cut = path.slice(0, MAX_ENDPOINT_LENGTH);
  const percent = cut.lastIndexOf('%');
  if (percent > cut.length - 3) cut = cut.slice(0, percent);
  const escapes = TRAILING_ESCAPES.exec(cut)?.[0];
  if (escapes === undefined) return cut;
  const bytes = escapes
    .slice(1)
    .split('%')
    .map((hex) => Number.parseInt(hex, 16));
  let lead = bytes.length - 1;
  while (lead > 0 && isContinuation(bytes[lead]!)) lead--;
  const first = bytes[lead]!;
  const incomplete = first >= 0xc0 && bytes.length - lead < sequenceLength(first);
  return incomplete ? cut.slice(0, cut.length - escapes.length + 3 * lead) : cut;
}
