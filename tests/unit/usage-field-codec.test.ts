import fc from 'fast-check';
import { decodeUsage, encodeUsage, parseField } from '../../src/usage/redis/field-codec.js';
import { emptyKeyUsage, type KeyUsage } from '../../src/usage/usage.js';

/** What Redis hands back after HINCRBY/HINCRBYFLOAT and HGETALL: the same pairs, values as strings. */
const asStored = (usage: KeyUsage): string[] => {
  const { counts, sums } = encodeUsage(usage);
  return [...counts, ...sums].map(String);
};

const endpoint = (requests: number, successful: number, totalDurationMs: number) => ({ requests, successful, failed: requests - successful, totalDurationMs });

describe('the usage field codec', () => {
  it('writes the fields every earlier version wrote: <section>|<name>|<metric>, zeros left out', () => {
    const usage = emptyKeyUsage();
    usage.endpoints.set('/a', endpoint(3, 2, 30.5));
    usage.customers.set('acme', { requests: 3, successful: 3, failed: 0 });
    usage.minutes.set(1_767_607_200_000, { requests: 3, successful: 2, failed: 1, rateLimited: 1, totalDurationMs: 30.5 });
    expect(encodeUsage(usage)).toEqual({
      counts: ['e|/a|r', 3, 'e|/a|s', 2, 'e|/a|f', 1, 'c|acme|r', 3, 'c|acme|s', 3, 'm|1767607200000|r', 3, 'm|1767607200000|s', 2, 'm|1767607200000|f', 1, 'm|1767607200000|l', 1],
      sums: ['e|/a|d', 30.5, 'm|1767607200000|d', 30.5],
    });
  });

  it('reads back names that contain "|", look like fields, are empty or are not ASCII', () => {
    const usage = emptyKeyUsage();
    for (const [i, name] of ['/a|b', '|', '||', 'e|/x|r', '', '/é/日本/🚀', 'c\u0301af\u00e9', ' '].entries()) {
      usage.endpoints.set(name, endpoint(i + 1, i, i / 4));
      usage.customers.set(name, { requests: i + 1, successful: 1, failed: i });
    }
    expect(decodeUsage(asStored(usage))).toEqual(usage);
  });

  it('writes each day of the series beside the totals as de|<day>|<path>|<metric> and dc|<day>|<customer>|<metric>, which earlier versions pass over', () => {
    const usage = emptyKeyUsage();
    const day = 1_767_571_200_000;
    usage.days.set(day, {
      endpoints: new Map([['/a|b', { requests: 2, successful: 1, failed: 1, rateLimited: 1, totalDurationMs: 4.5 }]]),
      customers: new Map([['acme', { requests: 2, successful: 1, failed: 1, rateLimited: 1, totalDurationMs: 4.5 }]]),
    });
    const encoded = encodeUsage(usage);
    expect(encoded).toEqual({
      counts: [`de|${day}|/a|b|r`, 2, `de|${day}|/a|b|s`, 1, `de|${day}|/a|b|f`, 1, `de|${day}|/a|b|l`, 1, `dc|${day}|acme|r`, 2, `dc|${day}|acme|s`, 1, `dc|${day}|acme|f`, 1, `dc|${day}|acme|l`, 1],
      sums: [`de|${day}|/a|b|d`, 4.5, `dc|${day}|acme|d`, 4.5],
    });
    expect(encoded.counts.filter((f) => typeof f === 'string').map((f) => parseField(f as string))).toEqual(Array(8).fill(undefined));
    expect(decodeUsage(asStored(usage))).toEqual(usage);
    // Not a day: passed over.
    expect(decodeUsage(['de|1e3|/a|r', '1', 'dc||acme|r', '1', 'dx|1|/a|r', '1', 'de|5|/a|x', '1'])).toEqual(emptyKeyUsage());
  });

  it('reads an empty hash as no usage', () => {
    expect(decodeUsage([])).toEqual(emptyKeyUsage());
    expect(encodeUsage(emptyKeyUsage())).toEqual({ counts: [], sums: [] });
  });

  it('passes over fields of no known section or metric, and minutes that are not a start in ms', () => {
    const stored = ['x|/a|r', '1', 'e|/a|l', '1', 'c|acme|d', '5', 'e/a|r', '1', 'er', '1', 'm|1e3|r', '1', 'm||r', '1', 'e|/ok|r', '2'];
    const expected = emptyKeyUsage();
    expected.endpoints.set('/ok', { requests: 2, successful: 0, failed: 0, totalDurationMs: 0 });
    expect(decodeUsage(stored)).toEqual(expected);
    expect(parseField('e|/a|b|r')).toEqual({ section: 'e', name: '/a|b', metric: 'r' });
    expect(parseField('e|/a|l')).toBeUndefined();
  });

  it('reads back any usage a recorder can hand over', () => {
    const counts = fc.nat({ max: 1_000_000 }).chain((requests) =>
      fc.record({ requests: fc.constant(requests + 1), successful: fc.nat({ max: requests + 1 }) }).map(({ requests, successful }) => ({ requests, successful, failed: requests - successful })),
    );
    const duration = fc.double({ min: 0, max: 1e9, noNaN: true });
    const usage = fc
      .record({
        endpoints: fc.array(fc.tuple(fc.string({ unit: 'binary', maxLength: 40 }), counts, duration), { maxLength: 8 }),
        customers: fc.array(fc.tuple(fc.string({ unit: 'grapheme', maxLength: 20 }), counts), { maxLength: 8 }),
        minutes: fc.array(fc.tuple(fc.nat({ max: 40_000_000 }), counts, fc.nat({ max: 10 }), duration), { maxLength: 8 }),
        days: fc.array(fc.tuple(fc.nat({ max: 30_000 }), fc.boolean(), fc.string({ unit: 'binary', maxLength: 40 }), counts, fc.nat({ max: 10 }), duration), { maxLength: 8 }),
      })
      .map(({ endpoints, customers, minutes, days }) => {
        const u = emptyKeyUsage();
        for (const [name, c, d] of endpoints) u.endpoints.set(name, { ...c, totalDurationMs: d });
        for (const [name, c] of customers) u.customers.set(name, c);
        for (const [minute, c, limited, d] of minutes) u.minutes.set(minute * 60_000, { ...c, rateLimited: Math.min(limited, c.failed), totalDurationMs: d });
        for (const [day, isEndpoint, name, c, limited, d] of days) {
          const entry = u.days.get(day * 86_400_000) ?? { endpoints: new Map(), customers: new Map() };
          u.days.set(day * 86_400_000, entry);
          (isEndpoint ? entry.endpoints : entry.customers).set(name, { ...c, rateLimited: Math.min(limited, c.failed), totalDurationMs: d });
        }
        return u;
      });
    fc.assert(fc.property(usage, (u) => expect(decodeUsage(asStored(u))).toEqual(u)));
  });
});
