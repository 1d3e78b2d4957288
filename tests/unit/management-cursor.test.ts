import fc from 'fast-check';
import { decodeCursor, encodeCursor } from '../../src/management/cursor.js';

describe('list cursors', () => {
  it('round-trip every sequence number', () => {
    fc.assert(
      fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), (seq) => decodeCursor(encodeCursor(seq)) === seq),
    );
  });

  it('are opaque: no digits of the sequence number show', () => {
    expect(encodeCursor(12345)).not.toContain('12345');
    expect(encodeCursor(12345)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it.each([
    ['empty', ''],
    ['a bare number', '42'],
    ['base64 of a bare number', Buffer.from('42').toString('base64url')],
    ['an unknown version', Buffer.from('v2:42').toString('base64url')],
    ['a leading zero', Buffer.from('v1:042').toString('base64url')],
    ['a negative number', Buffer.from('v1:-1').toString('base64url')],
    ['beyond 2^53', Buffer.from('v1:9007199254740993').toString('base64url')],
    ['padded base64', encodeCursor(7) + '='],
    ['standard base64 alphabet', '+/+/'],
    ['too long', 'A'.repeat(65)],
  ])('refuse %s', (_label, text) => {
    expect(decodeCursor(text)).toBeUndefined();
  });

  it('refuse any string that is not exactly an issued cursor', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const seq = decodeCursor(text);
        return seq === undefined || encodeCursor(seq) === text;
      }),
    );
  });
});
