import fc from 'fast-check';
import { decodeCursor, encodeCursor } from '../../src/management/cursor.js';

const position = fc.record({
  at: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
  id: fc.stringMatching(/^[A-Za-z0-9._~:-]{1,128}$/),
});

describe('list cursors', () => {
  it('round-trip every position a list can hold', () => {
    fc.assert(fc.property(position, (p) => expect(decodeCursor(encodeCursor(p))).toEqual(p)));
  });

  it('are opaque: neither the time nor the id shows', () => {
    const cursor = encodeCursor({ at: 1_763_000_000_123, id: 'key_abc' });
    expect(cursor).not.toContain('1763000000123');
    expect(cursor).not.toContain('key_abc');
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it.each([
    ['empty', ''],
    ['a bare number', '42'],
    ['base64 of a bare number', Buffer.from('42').toString('base64url')],
    ['the previous version', Buffer.from('v1:42').toString('base64url')],
    ['an unknown version', Buffer.from('v3:42:key_a').toString('base64url')],
    ['no id', Buffer.from('v2:42:').toString('base64url')],
    ['a leading zero', Buffer.from('v2:042:key_a').toString('base64url')],
    ['a negative time', Buffer.from('v2:-1:key_a').toString('base64url')],
    ['beyond 2^53', Buffer.from('v2:9007199254740993:key_a').toString('base64url')],
    ['an id with a slash', Buffer.from('v2:42:key/a').toString('base64url')],
    ['padded base64', encodeCursor({ at: 7, id: 'k' }) + '='],
    ['standard base64 alphabet', '+/+/'],
    ['too long', 'A'.repeat(257)],
  ])('refuse %s', (_label, text) => {
    expect(decodeCursor(text)).toBeUndefined();
  });

  it('refuse any string that is not exactly an issued cursor', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.base64String(),
          position.map(encodeCursor).map((c) => c + 'A'),
        ),
        (text) => {
          const decoded = decodeCursor(text);
          return decoded === undefined || encodeCursor(decoded) === text;
        },
      ),
    );
  });
});
