/**
 * The shape of a key's secret (docs/guides/leaked-keys.md): `<prefix><random><checksum>`, where
 * `random` is 30 base62 characters and `checksum` the CRC-32 of `prefix + random` in 6 base62
 * characters. Secret scanners find it by its shape alone, and a mistyped or invented secret is told
 * from a real one without asking any store.
 */
import { randomInt } from 'node:crypto';
import { DEFAULT_KEY_PREFIX } from '../config.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BASE62_CODES = Uint8Array.from(BASE62, (digit) => digit.charCodeAt(0));
const RANDOM_CHARS = 30;
const CHECKSUM_CHARS = 6;
/** What follows the prefix: 30 random characters and the checksum. */
const BODY_CHARS = RANDOM_CHARS + CHECKSUM_CHARS;
/** A checksummed secret of any prefix, the prefix captured. */
const CHECKSUMMED = /^([a-z0-9_]{1,15}_)[0-9A-Za-z]{36}$/;
/**
 * A secret of either shape: checksummed under any prefix, or as issued before checksums (`tg_` and 32
 * random bytes in base64url). A pattern, so the API's request schemas say the same.
 */
export const SECRET_PATTERN = '^(?:[a-z0-9_]{1,15}_[0-9A-Za-z]{36}|tg_[A-Za-z0-9_-]{43})$';
const SECRET_SHAPE = new RegExp(SECRET_PATTERN);
/** The longest secret of either shape: a 16-character prefix and 36 characters. */
const MAX_SECRET_LENGTH = 52;

/** `value` (an unsigned 32-bit integer) in base62, most significant digit first, left-padded to 6. */
export function base62Checksum(value: number): string {
  let digits = '';
  for (let rest = value; rest > 0; rest = Math.floor(rest / 62)) digits = BASE62[rest % 62]! + digits;
  return digits.padStart(CHECKSUM_CHARS, '0');
}

/** CRC-32's table (IEEE polynomial, reflected), one entry per byte value. */
const CRC_TABLE = Int32Array.from({ length: 256 }, (_, byte) => {
  let c = byte;
  for (let bit = 0; bit < 8; bit++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});

/**
 * CRC-32 (IEEE, as zlib computes it) of `text`'s first `end` characters, each one byte: a secret's
 * prefix and body are ASCII (KEY_PREFIX_PATTERN, base62). Read in place, so a forged secret is refused
 * without a copy or an encoding of it.
 */
function crc32Ascii(text: string, end: number): number {
  let crc = -1;
  for (let i = 0; i < end; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

/** The checksum of a secret's `prefix + random` (ASCII): CRC-32 (IEEE, as zlib computes it) in base62. */
export function checksumOf(prefixAndRandom: string): string {
  return base62Checksum(crc32Ascii(prefixAndRandom, prefixAndRandom.length));
}

/** A new secret under `prefix` (KEY_PREFIX, default `tg_`): 30 base62 characters drawn uniformly (≥ 178 bits), then the checksum. */
export function generateChecksummedSecret(prefix = DEFAULT_KEY_PREFIX): string {
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += BASE62[randomInt(62)];
  return prefix + random + checksumOf(prefix + random);
}

/** Whether `candidate` can be a secret at all, of either shape: what can't never reaches a store. */
export function hasSecretShape(candidate: string): boolean {
  return candidate.length <= MAX_SECRET_LENGTH && SECRET_SHAPE.test(candidate);
}

/**
 * Whether `candidate` is of the checksummed shape under `prefix` (the prefix, then 36 base62
 * characters) with a checksum that does not match: no key can have it. Anything else (a secret of
 * another shape or prefix included) is for the key cache to decide.
 */
export function hasWrongChecksum(candidate: string, prefix: string): boolean {
  if (candidate.length !== prefix.length + BODY_CHARS || !candidate.startsWith(prefix)) return false;
  for (let i = prefix.length; i < candidate.length; i++) {
    const c = candidate.charCodeAt(i);
    // 0-9, A-Z, a-z
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122))) return false;
  }
  return !endsWithChecksum(candidate, crc32Ascii(candidate, candidate.length - CHECKSUM_CHARS));
}

/** Whether `candidate`'s last 6 characters are `value` in base62 (base62Checksum), read in place. */
function endsWithChecksum(candidate: string, value: number): boolean {
  let rest = value;
  for (let i = candidate.length - 1; i >= candidate.length - CHECKSUM_CHARS; i--) {
    if (candidate.charCodeAt(i) !== BASE62_CODES[rest % 62]) return false;
    rest = Math.floor(rest / 62);
  }
  return true;
}

/** The prefix a secret was issued under: what a mask of it shows (`acme_live_…`, `tg_…`). */
export function prefixOf(secret: string): string {
  const checksummed = CHECKSUMMED.exec(secret);
  if (checksummed !== null) return checksummed[1]!;
  return secret.slice(0, secret.indexOf('_') + 1);
}

/** A secret as a mask shows it: its own prefix and its last 4 characters. */
export function maskSecret(secret: string): string {
  return `${prefixOf(secret)}…${secret.slice(-4)}`;
}
