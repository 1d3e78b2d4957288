import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import {
  base62Checksum,
  checksumOf,
  generateChecksummedSecret,
  hasSecretShape,
  hasWrongChecksum,
  maskSecret,
} from '../../src/keys/secret-format.js';
import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** The gitleaks rule the README publishes: its `regex`, RE2 syntax (no look-around, no back-reference). */
const README_RULE = /regex = '''(.+)'''/.exec(readFileSync('README.md', 'utf8'))![1]!;

describe('checksummed secrets (contract section 31)', () => {
  it('writes CRC-32 (IEEE, as zlib computes it) in base62, left-padded to 6', () => {
    // Worked out independently with Python's zlib.crc32 and a base62 loop.
    expect(checksumOf('tg_' + 'a'.repeat(30))).toBe('4A0hEs');
    expect(checksumOf('acme_live_0123456789ABCDEFGHIJabcdefghij')).toBe('4JHJ9h');
    expect(base62Checksum(0)).toBe('000000');
    expect(base62Checksum(0xffffffff)).toBe('4gfFC3');
    expect(base62Checksum(61)).toBe('00000z');
  });

  it("computes the checksum as zlib's CRC-32 does, for any prefix and body a secret can have", () => {
    const prefix = fc.stringMatching(/^[a-z0-9_]{1,15}_$/);
    const body = fc.stringMatching(/^[0-9A-Za-z]{30}$/);
    fc.assert(
      fc.property(prefix, body, (p, b) => {
        expect(checksumOf(p + b)).toBe(base62Checksum(crc32(p + b)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('issues secrets of the documented shape, under the configured prefix, whose checksum holds', () => {
    for (const prefix of ['tg_', 'acme_live_', 'a_']) {
      const secret = generateChecksummedSecret(prefix);
      expect(secret).toMatch(new RegExp(`^${prefix}[0-9A-Za-z]{36}$`));
      expect(secret.slice(-6)).toBe(checksumOf(secret.slice(0, -6)));
      expect(hasWrongChecksum(secret, prefix)).toBe(false);
      expect(hasSecretShape(secret)).toBe(true);
    }
  });

  it("publishes a rule in the README that finds the default prefix's secrets in text, and only them", () => {
    expect(README_RULE).not.toMatch(/\(\?[=!<]|\\[1-9]/);
    const rule = new RegExp(README_RULE, 'g');
    const secret = generateChecksummedSecret('tg_');
    const found = [...`key = "${secret}"\nAuthorization: Bearer ${secret}`.matchAll(rule)];
    expect(found.map((m) => m[1])).toEqual([secret, secret]);
    expect(`x${secret}`.match(rule)).toBeNull();
    expect(`${secret}0`.match(rule)).toBeNull();
    expect(('tg_' + randomBytes(32).toString('base64url')).match(rule)).toBeNull();
  });

  it('tells any one changed character of a secret from the secret, without a store', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 35 }),
        fc.constantFrom(...BASE62),
        fc.constantFrom('tg_', 'acme_live_'),
        (at, replacement, prefix) => {
          const secret = generateChecksummedSecret(prefix);
          const i = prefix.length + at;
          fc.pre(secret[i] !== replacement);
          const typo = secret.slice(0, i) + replacement + secret.slice(i + 1);
          expect(hasWrongChecksum(typo, prefix)).toBe(true);
        },
      ),
    );
  });

  it('leaves every other credential to the key cache: older secrets, other prefixes, other lengths', () => {
    const older = 'tg_' + randomBytes(32).toString('base64url');
    expect(hasWrongChecksum(older, 'tg_')).toBe(false);
    expect(hasSecretShape(older)).toBe(true);
    const underOldPrefix = generateChecksummedSecret('tg_');
    expect(hasWrongChecksum(underOldPrefix, 'acme_live_')).toBe(false);
    expect(hasSecretShape(underOldPrefix)).toBe(true);
    expect(hasWrongChecksum('tg_' + 'a'.repeat(35), 'tg_')).toBe(false);
    expect(hasWrongChecksum('tg_' + 'a'.repeat(35) + '-', 'tg_')).toBe(false);
    expect(hasSecretShape('tg_' + 'a'.repeat(35) + '-')).toBe(false);
  });

  it('masks a secret with its own prefix', () => {
    const secret = generateChecksummedSecret('acme_live_');
    expect(maskSecret(secret)).toBe(`acme_live_…${secret.slice(-4)}`);
    expect(maskSecret('tg_' + randomBytes(32).toString('base64url'))).toMatch(/^tg_…/);
  });
});
