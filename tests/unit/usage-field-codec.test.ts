import fc from 'fast-check';
import { emptyFailureLog, leftOutKey, parseLeftOutKey } from '../../src/usage/failure-log.js';
import { binOf } from '../../src/usage/latency-histogram.js';
import { failureEntry } from '../helpers/failure-entry.js';
import { decodeUsage, encodeUsage, parseField } from '../../src/usage/redis/field-codec.js';
import {
  emptyBucket,
  emptyDay,
  emptyFiledUsage,
  emptyKeyUsage,
  type BucketCounts,
  type FiledUsage,
  type KeyUsage,
} from '../../src/usage/usage.js';
import { previousReads, readsBeforeRoutes } from '../fixtures/usage-redis-previous.js';

/** What Redis hands back after HINCRBY/HINCRBYFLOAT and HGETALL: the same pairs, values as strings. */
const asStored = (usage: KeyUsage): string[] => {
  const { counts, sums } = encodeUsage(usage);
  return [...counts, ...sums].map(String);
};

const endpoint = (requests: number, successful: number, totalDurationMs: number) => ({
  requests,
  successful,
  failed: requests - successful,
  totalDurationMs,
  cost: 0,
});
const bucket = (counts: Partial<BucketCounts>): BucketCounts => ({ ...emptyBucket(), ...counts });

/** A bucket with every fact: its requests' status classes, outcomes, cost and latency follow from its counts. */
function factsOf(
  c: { requests: number; successful: number; failed: number },
  limited: number,
  totalDurationMs: number,
): BucketCounts {
  const rateLimited = Math.min(limited, c.failed);
  return bucket({
    ...c,
    rateLimited,
    totalDurationMs,
    cost: c.requests - rateLimited,
    status2xx: c.successful,
    status4xx: rateLimited,
    status5xx: c.failed - rateLimited,
    backendError: c.failed - rateLimited,
    latency: new Map([[binOf(totalDurationMs / c.requests), c.requests]]),
  });
}

describe('the usage field codec', () => {
  it('writes the fields every earlier version wrote: <section>|<name>|<metric>, zeros left out', () => {
    const usage = emptyKeyUsage();
    usage.endpoints.set('/a', endpoint(3, 2, 30.5));
    usage.customers.set('acme', { requests: 3, successful: 3, failed: 0 });
    usage.minutes.set(
      1_767_607_200_000,
      bucket({ requests: 3, successful: 2, failed: 1, rateLimited: 1, totalDurationMs: 30.5 }),
    );
    expect(encodeUsage(usage)).toEqual({
      counts: [
        'e|/a|r',
        3,
        'e|/a|s',
        2,
        'e|/a|f',
        1,
        'c|acme|r',
        3,
        'c|acme|s',
        3,
        'm|1767607200000|r',
        3,
        'm|1767607200000|s',
        2,
        'm|1767607200000|f',
        1,
        'm|1767607200000|l',
        1,
      ],
      sums: ['e|/a|d', 30.5, 'm|1767607200000|d', 30.5],
      sets: [],
    });
  });

  it('reads back names that contain "|", look like fields, are empty or are not ASCII', () => {
    const usage = emptyKeyUsage();
    for (const [i, name] of [
      '/a|b',
      '|',
      '||',
      'e|/x|r',
      '',
      '/é/日本/🚀',
      'c\u0301af\u00e9',
      ' ',
    ].entries()) {
      usage.endpoints.set(name, endpoint(i + 1, i, i / 4));
      usage.customers.set(name, { requests: i + 1, successful: 1, failed: i });
    }
    expect(decodeUsage(asStored(usage))).toEqual(usage);
  });

  it('writes each day of the series beside the totals as de|<day>|<path>|<metric> and dc|<day>|<customer>|<metric>, which earlier versions pass over', () => {
    const usage = emptyKeyUsage();
    const day = 1_767_571_200_000;
    usage.days.set(day, {
      endpoints: new Map([
        ['/a|b', bucket({ requests: 2, successful: 1, failed: 1, rateLimited: 1, totalDurationMs: 4.5 })],
      ]),
      customers: new Map([
        ['acme', bucket({ requests: 2, successful: 1, failed: 1, rateLimited: 1, totalDurationMs: 4.5 })],
      ]),
      routes: new Map(),
    });
    const encoded = encodeUsage(usage);
    expect(encoded).toEqual({
      counts: [
        `de|${day}|/a|b|r`,
        2,
        `de|${day}|/a|b|s`,
        1,
        `de|${day}|/a|b|f`,
        1,
        `de|${day}|/a|b|l`,
        1,
        `dc|${day}|acme|r`,
        2,
        `dc|${day}|acme|s`,
        1,
        `dc|${day}|acme|f`,
        1,
        `dc|${day}|acme|l`,
        1,
      ],
      sums: [`de|${day}|/a|b|d`, 4.5, `dc|${day}|acme|d`, 4.5],
      sets: [],
    });
    expect(encoded.counts.filter((f) => typeof f === 'string').map((f) => parseField(f as string))).toEqual(
      Array(8).fill(undefined),
    );
    expect(decodeUsage(asStored(usage))).toEqual(usage);
    // Not a day: passed over.
    expect(decodeUsage(['de|1e3|/a|r', '1', 'dc||acme|r', '1', 'dx|1|/a|r', '1', 'de|5|/a|x', '1'])).toEqual(
      emptyKeyUsage(),
    );
  });

  it('reads an empty hash as no usage', () => {
    expect(decodeUsage([])).toEqual(emptyKeyUsage());
    expect(encodeUsage(emptyKeyUsage())).toEqual({ counts: [], sums: [], sets: [] });
  });

  it('writes a failure log entry as one HSET field of a random id, and left-out counts as xl| counts; reads both back', () => {
    const usage = emptyKeyUsage();
    const failures = emptyFailureLog();
    const entry = failureEntry({
      requestId: 'req-1',
      limit: { name: 'hour', period: 'hour', scope: 'key', limit: 5 },
    });
    failures.entries.push(entry);
    failures.leftOut.set(leftOutKey(entry.atMs, 'con_a|b', 'rate_limit_exceeded'), 7);
    const encoded = encodeUsage({ ...usage, failures });
    expect(encoded.sets).toHaveLength(2);
    expect(encoded.sets[0]).toMatch(/^xf\|[A-Za-z0-9_-]{16}$/);
    expect(encoded.counts).toEqual([`xl|${entry.atMs}|con_a|b|rate_limit_exceeded`, 7]);
    const decoded = decodeUsage([...encoded.sets, ...encoded.counts.map(String)]);
    expect(decoded.failures!.entries).toEqual([entry]);
    expect(parseLeftOutKey([...decoded.failures!.leftOut.keys()][0]!)).toEqual({
      minuteMs: entry.atMs,
      consumerId: 'con_a|b',
      code: 'rate_limit_exceeded',
    });
  });

  it('passes over fields of no known section or metric, and minutes that are not a start in ms', () => {
    const stored = [
      'x|/a|r',
      '1',
      'e|/a|l',
      '1',
      'c|acme|d',
      '5',
      'e/a|r',
      '1',
      'er',
      '1',
      'm|1e3|r',
      '1',
      'm||r',
      '1',
      'e|/ok|r',
      '2',
    ];
    const expected = emptyKeyUsage();
    expected.endpoints.set('/ok', { requests: 2, successful: 0, failed: 0, totalDurationMs: 0, cost: 0 });
    expect(decodeUsage(stored)).toEqual(expected);
    expect(parseField('e|/a|b|r')).toEqual({ section: 'e', name: '/a|b', metric: 'r' });
    expect(parseField('e|/a|l')).toBeUndefined();
    expect(parseField('m|60000|h12')).toEqual({ section: 'm', name: '60000', metric: 'h12' });
    expect(
      decodeUsage([
        'm|60000|h',
        '1',
        'm|60000|h-1',
        '1',
        'm|60000|h1.5',
        '1',
        'm|60000|h99999',
        '1',
        'p|%|e|/a|r',
        '1',
        'p|con',
        '1',
      ]),
    ).toEqual(
      (() => {
        const u = emptyKeyUsage();
        u.minutes.set(60_000, emptyBucket());
        return u;
      })(),
    );
  });

  it("writes request facts and a consumer's part as fields the previous version passes over, so it still counts each request once", () => {
    const usage = emptyKeyUsage();
    const minute = 1_767_607_200_000;
    const day = 1_767_571_200_000;
    const facts = bucket({
      requests: 2,
      successful: 1,
      failed: 1,
      totalDurationMs: 12,
      cost: 1,
      status2xx: 1,
      status5xx: 1,
      backendError: 1,
      latency: new Map([
        [binOf(2), 1],
        [binOf(10), 1],
      ]),
    });
    const whole: FiledUsage = {
      endpoints: new Map([['/a', { requests: 2, successful: 1, failed: 1, totalDurationMs: 12, cost: 1 }]]),
      customers: new Map([['acme', { requests: 2, successful: 1, failed: 1 }]]),
      minutes: new Map([[minute, facts]]),
      days: new Map([
        [
          day,
          {
            endpoints: new Map([['/a', facts]]),
            customers: new Map([['acme', facts]]),
            routes: new Map([['search', facts]]),
          },
        ],
      ]),
    };
    Object.assign(usage, whole);
    usage.consumers.set('con_1|x', whole);
    const stored = asStored(usage);
    expect(stored).toEqual(
      expect.arrayContaining([
        `m|${minute}|$`,
        `m|${minute}|5`,
        `m|${minute}|ob`,
        `m|${minute}|h${binOf(10)}`,
        `p|con_1%7Cx|m|${minute}|r`,
        `p|con_1%7Cx|de|${day}|/a|h${binOf(2)}`,
      ]),
    );
    expect(decodeUsage(stored)).toEqual(usage);
    // The previous version reads the whole's counts and nothing of the part: every request once.
    const read: string[] = [];
    for (let i = 0; i < stored.length; i += 2)
      if (previousReads(stored[i]!)) read.push(stored[i]!, stored[i + 1]!);
    const previous = decodeUsage(read);
    expect(previous.consumers.size).toBe(0);
    expect(previous.endpoints.get('/a')).toEqual({ ...whole.endpoints.get('/a'), cost: 0 });
    expect(previous.minutes.get(minute)).toEqual(
      bucket({ requests: 2, successful: 1, failed: 1, totalDurationMs: 12 }),
    );
  });

  it('writes each day by route as dr|<day>|<route id>|<metric> (empty: the catch-all), which the version before routes passes over', () => {
    const day = 1_767_571_200_000;
    const search = bucket({ requests: 3, successful: 3, totalDurationMs: 6, cost: 15, status2xx: 3 });
    const catchAll = bucket({ requests: 1, failed: 1, totalDurationMs: 2, status4xx: 1, routeNotAllowed: 1 });
    const whole = emptyFiledUsage();
    whole.endpoints.set('/v1/search', {
      requests: 4,
      successful: 3,
      failed: 1,
      totalDurationMs: 8,
      cost: 15,
    });
    whole.days.set(day, {
      endpoints: new Map([
        ['/v1/search', bucket({ requests: 4, successful: 3, failed: 1, totalDurationMs: 8 })],
      ]),
      customers: new Map(),
      routes: new Map([
        ['search', search],
        ['', catchAll],
      ]),
    });
    const usage: KeyUsage = { ...whole, consumers: new Map([['con_1', whole]]) };
    const stored = asStored(usage);
    expect(stored).toEqual(
      expect.arrayContaining([
        `dr|${day}|search|r`,
        '3',
        `dr|${day}|search|$`,
        '15',
        `dr|${day}||r`,
        '1',
        `dr|${day}||or`,
        '1',
        `p|con_1|dr|${day}|search|r`,
        '3',
      ]),
    );
    expect(decodeUsage(stored)).toEqual(usage);
    // The version before routes reads everything but the routes: every request still counts once.
    const read: string[] = [];
    for (let i = 0; i < stored.length; i += 2)
      if (readsBeforeRoutes(stored[i]!)) read.push(stored[i]!, stored[i + 1]!);
    expect(read.filter((_, i) => i % 2 === 0 && read[i]!.includes('dr|'))).toEqual([]);
    const previous = decodeUsage(read);
    expect(previous.endpoints).toEqual(usage.endpoints);
    expect(previous.days.get(day)).toEqual({ ...usage.days.get(day)!, routes: new Map() });
    expect(previous.consumers.get('con_1')!.endpoints).toEqual(whole.endpoints);
  });

  it('reads back any usage a recorder can hand over', () => {
    const counts = fc
      .nat({ max: 1_000_000 })
      .chain((requests) =>
        fc
          .record({ requests: fc.constant(requests + 1), successful: fc.nat({ max: requests + 1 }) })
          .map(({ requests, successful }) => ({ requests, successful, failed: requests - successful })),
      );
    const duration = fc.double({ min: 0, max: 1e9, noNaN: true });
    const usage = fc
      .record({
        endpoints: fc.array(fc.tuple(fc.string({ unit: 'binary', maxLength: 40 }), counts, duration), {
          maxLength: 8,
        }),
        customers: fc.array(fc.tuple(fc.string({ unit: 'grapheme', maxLength: 20 }), counts), {
          maxLength: 8,
        }),
        minutes: fc.array(fc.tuple(fc.nat({ max: 40_000_000 }), counts, fc.nat({ max: 10 }), duration), {
          maxLength: 8,
        }),
        days: fc.array(
          fc.tuple(
            fc.nat({ max: 30_000 }),
            fc.constantFrom('endpoints', 'customers', 'routes' as const),
            fc.string({ unit: 'binary', maxLength: 40 }),
            counts,
            fc.nat({ max: 10 }),
            duration,
          ),
          { maxLength: 8 },
        ),
        consumers: fc.uniqueArray(fc.string({ unit: 'grapheme', maxLength: 20 }), { maxLength: 3 }),
      })
      .map(({ endpoints, customers, minutes, days, consumers }) => {
        const filed = (u: FiledUsage) => {
          for (const [name, c, d] of endpoints)
            u.endpoints.set(name, { ...c, totalDurationMs: d, cost: c.successful });
          for (const [name, c] of customers) u.customers.set(name, c);
          for (const [minute, c, limited, d] of minutes)
            u.minutes.set(minute * 60_000, factsOf(c, limited, d));
          for (const [day, entries, name, c, limited, d] of days) {
            const entry = u.days.get(day * 86_400_000) ?? emptyDay();
            u.days.set(day * 86_400_000, entry);
            entry[entries].set(name, factsOf(c, limited, d));
          }
          return u;
        };
        const u = emptyKeyUsage();
        filed(u);
        // A consumer's entry holds what its keys' requests filed there: a recorder never hands over one
        // with nothing in it (fast-check found that such an entry is not read back).
        const filedAny = endpoints.length + customers.length + minutes.length + days.length > 0;
        if (filedAny)
          for (const consumerId of consumers) u.consumers.set(consumerId, filed(emptyFiledUsage()));
        return u;
      });
    fc.assert(fc.property(usage, (u) => expect(decodeUsage(asStored(u))).toEqual(u)));
  });
});
