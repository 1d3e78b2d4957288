import fc from 'fast-check';
import { createTimestamp, isoTimestamp } from '../../src/management/time-format.js';

// 1970 to 9999: four-digit years, the range the formats can express.
const instant = fc.integer({ min: 0, max: 253_402_300_799_999 });

describe('isoTimestamp', () => {
  it('renders YYYY-MM-DDThh:mm:ssZ in UTC, dropping the milliseconds', () => {
    expect(isoTimestamp(Date.UTC(2026, 10, 21, 14, 23, 2, 999))).toBe('2026-11-21T14:23:02Z');
    expect(isoTimestamp(new Date(Date.UTC(2024, 1, 29, 0, 0, 0, 0)))).toBe('2024-02-29T00:00:00Z');
    expect(isoTimestamp(0)).toBe('1970-01-01T00:00:00Z');
  });

  it('always has the documented shape and names the instant truncated to its second', () => {
    fc.assert(
      fc.property(instant, (ms) => {
        const text = isoTimestamp(ms);
        return (
          /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(text) &&
          Date.parse(text) === Math.floor(ms / 1000) * 1000
        );
      }),
    );
  });
});

describe('createTimestamp', () => {
  it('renders YYYY-MM-DD HH:MM:SS in UTC, dropping the milliseconds', () => {
    expect(createTimestamp(Date.UTC(2026, 10, 21, 14, 23, 2, 999))).toBe('2026-11-21 14:23:02');
    expect(createTimestamp(new Date(Date.UTC(1999, 11, 31, 23, 59, 59, 500)))).toBe('1999-12-31 23:59:59');
  });

  it('names the same second as isoTimestamp', () => {
    fc.assert(
      fc.property(instant, (ms) => {
        const text = createTimestamp(ms);
        return (
          /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(text) &&
          text.replace(' ', 'T') + 'Z' === isoTimestamp(ms)
        );
      }),
    );
  });
});
