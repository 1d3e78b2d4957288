/**
 * The one rule for a customer id (src/plans/customer-id.ts): no control character, lengths in code
 * points, cut never inside a surrogate pair.
 */
import { describe, expect, it } from '@jest/globals';
import {
  codePointLength,
  cutCustomerId,
  isCleanCustomerId,
  keptCustomerId,
  MAX_CUSTOMER_ID_LENGTH,
} from '../../src/plans/customer-id.js';

describe('a customer id', () => {
  it('is clean without U+0000 to U+001F and U+007F, whatever else it holds', () => {
    for (let code = 0; code <= 0x1f; code++)
      expect(isCleanCustomerId(`a${String.fromCharCode(code)}b`)).toBe(false);
    expect(isCleanCustomerId('a\u007fb')).toBe(false);
    for (const clean of ['', 'cus_1', 'café', '東京-🚀', ' spaced ', '\u0080\u009f', 'a~b'])
      expect(isCleanCustomerId(clean)).toBe(true);
  });

  it('counts code points: a pair of surrogates is one', () => {
    expect(codePointLength('😀'.repeat(200))).toBe(200);
    expect(codePointLength('abc')).toBe(3);
  });

  it(`is cut to ${MAX_CUSTOMER_ID_LENGTH} code points, never between two halves of one`, () => {
    expect(cutCustomerId('😀'.repeat(250))).toBe('😀'.repeat(200));
    expect(cutCustomerId('a' + '😀'.repeat(250))).toBe('a' + '😀'.repeat(199));
    expect(cutCustomerId('x'.repeat(201))).toBe('x'.repeat(200));
    const short = 'é'.repeat(200);
    expect(cutCustomerId(short)).toBe(short);
  });

  it('is kept by usage only when clean', () => {
    expect(keptCustomerId('a\u0000b')).toBeUndefined();
    expect(keptCustomerId(undefined)).toBeUndefined();
    expect(keptCustomerId('y'.repeat(300))).toBe('y'.repeat(200));
  });
});
