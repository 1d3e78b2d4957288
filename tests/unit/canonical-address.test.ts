/** One spelling per client address (src/net/canonical-address.ts), what every per-address count keys on. */
import { describe, expect, it } from '@jest/globals';
import { canonicalAddress } from '../../src/net/canonical-address.js';

describe('canonicalAddress', () => {
  it.each([
    ['2001:DB8::9', '2001:db8::9'],
    ['2001:db8:0:0:0:0:0:9', '2001:db8::9'],
    ['2001:0DB8:0000:0000:0000:0000:0000:0009', '2001:db8::9'],
    // RFC 5952 4.2: the longest run of zero groups is compressed, the first of equal runs, never one alone.
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['1:0:0:0:2:0:0:3', '1::2:0:0:3'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['::', '::'],
  ])('writes IPv6 %s as RFC 5952 does: %s', (spelling, canonical) => {
    expect(canonicalAddress(spelling)).toBe(canonical);
  });

  it.each([
    ['::FFFF:203.0.113.9', '203.0.113.9'],
    ['::ffff:cb00:7109', '203.0.113.9'],
    ['0:0:0:0:0:FFFF:CB00:7109', '203.0.113.9'],
    ['::ffff:0:5', '0.0.0.5'],
  ])('writes the IPv4-mapped %s as the IPv4 address %s', (spelling, canonical) => {
    expect(canonicalAddress(spelling)).toBe(canonical);
  });

  it('leaves IPv4, a zone and anything that is no IPv6 address as written', () => {
    expect(canonicalAddress('203.0.113.9')).toBe('203.0.113.9');
    expect(canonicalAddress('FE80:0::1%eth0')).toBe('fe80::1%eth0');
    // An IPv4-compatible address (deprecated) is not a mapped one.
    expect(canonicalAddress('::203.0.113.9')).toBe('::cb00:7109');
    for (const other of ['', 'unknown', 'cb00:7109', '[::1]', '2001:db8::9::1'])
      expect(canonicalAddress(other)).toBe(other);
  });
});
