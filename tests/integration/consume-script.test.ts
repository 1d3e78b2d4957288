import { Redis } from 'ioredis';
import {
  consumeArgs,
  consumeKeys,
  defineConsumeScript,
  type ConsumeCall,
} from '../../src/limits/consume-script.js';
import type { WindowLimit } from '../../src/limits/core/redis-twin.js';
import type { LeaseTerms } from '../../src/limits/lease-book.js';
import { RECLAIM_WAIT_MS } from '../../src/limits/core/window-lease.lua.js';
import {
  admittedOf,
  countOf,
  heldOf,
  leasedOf,
  oldestSlotOf,
  type ConsumeReply,
} from '../../src/limits/consume-reply.js';
import { counterKey, slidingKey } from '../../src/limits/limiter-keys.js';
import { SLOTS } from '../../src/limits/sliding-window.js';
import { REDIS_URL, testKeyPrefix } from '../helpers/services.js';
import { waitFor } from '../helpers/poll.js';

// The consume script alone, against a real Redis: no limiter, no lease book, no timers.
const prefix = testKeyPrefix();
const client = new Redis(REDIS_URL);
const subscriber = new Redis(REDIS_URL);
const consume = defineConsumeScript(client);
const now = Date.now();
const expiresAt = now + 3_600_000;
// Any channel: the script publishes where it is told, whatever the keys are called.
const channel = `${prefix}elsewhere`;

let counters = 0;
/** A fresh fixed window's count key (all under one hash tag: the test's calls mix them freely). */
function fixed(): string {
  return counterKey(`${prefix}{t}:c${counters++}`, 'hour', 0);
}
/** A fresh sliding limit's count key. */
function sliding(): string {
  return slidingKey(`${prefix}{t}:c${counters++}`, 'minute');
}

/** A fixed window's limit of 10, or a sliding one's when given a `slot`. */
const limit = (over: { limit?: number; expiresAt?: number; slot?: number } = {}): WindowLimit => {
  const { slot, ...terms } = { limit: 10, expiresAt, ...over };
  return slot === undefined
    ? { algorithm: 'fixed', ...terms }
    : { algorithm: 'sliding', ...terms, slot: String(slot) };
};
const terms = (over: Partial<LeaseTerms> = {}): LeaseTerms => ({
  lease: 0,
  settled: 0,
  returned: 0,
  ...over,
});

/** A call for one subject of the limits given (one fixed limit of 10 by default), `requests` of cost 1. */
function call(requests: number, over: Partial<ConsumeCall> = {}): ConsumeCall {
  const leases = over.leases ?? [terms()];
  return {
    now,
    reclaimChannel: channel,
    leases,
    limits: [[limit()]],
    known: [],
    balances: leases.map(() => undefined),
    runs: requests > 0 ? [requests, 1] : [],
    ...over,
  };
}

/** The reply, read through the accessors the limiter uses. */
function read(reply: ConsumeReply, c: ConsumeCall) {
  const n = c.limits.flat().length;
  const layout = {
    limits: n,
    subjects: c.leases.length,
    balances: c.balances.filter((b) => b !== undefined).length,
  };
  return {
    held: heldOf(reply),
    counts: Array.from({ length: n }, (_, i) => countOf(reply, i)),
    oldest: Array.from({ length: n }, (_, i) => oldestSlotOf(reply, i)),
    leased: c.leases.map((_, s) => leasedOf(reply, layout, s)),
    admitted: Array.from({ length: c.runs.length / 2 }, (_, r) => admittedOf(reply, layout, r)),
  };
}

async function run(keys: readonly string[], c: ConsumeCall) {
  return read(await consume(keys, c), c);
}

afterAll(async () => {
  const keys = await client.keys(prefix + '*');
  if (keys.length > 0) await client.del(...keys);
  await Promise.all([client.quit(), subscriber.quit()]);
});

describe('the consume script, one fixed limit', () => {
  it('passes every key it touches as KEYS, and its arguments by name', () => {
    const keys = consumeKeys([counterKey('tg:{key_x}', 'minute', 60_000), slidingKey('tg:{key_x}', 'hour')]);
    expect(keys).toEqual([
      'tg:{key_x}:minute:60000',
      'tg:{key_x}:minute:60000:lease',
      'tg:{key_x}:sliding:hour',
      'tg:{key_x}:sliding:hour:lease',
    ]);
    const two = call(3, {
      leases: [terms({ lease: 4 }), terms({ settled: 2, returned: 1 })],
      limits: [[limit()], [limit({ limit: 5, slot: 42 })]],
      known: [{ places: 7, marker: '' }, undefined],
      runs: [2, 1, 1, 5],
    });
    // One document, each part by name: per subject its lease terms and its limits, each with its
    // algorithm, its terms and what the caller knows of it (none: no loss to look for).
    expect(consumeArgs(two).map((json) => JSON.parse(json) as unknown)).toEqual([
      {
        now,
        reclaimChannel: channel,
        subjects: [
          {
            lease: 4,
            settled: 0,
            returned: 0,
            limits: [{ algorithm: 'fixed', limit: 10, expiresAt, known: { places: 7, marker: '' } }],
          },
          {
            lease: 0,
            settled: 2,
            returned: 1,
            limits: [{ algorithm: 'sliding', limit: 5, expiresAt, slot: '42' }],
          },
        ],
        runs: [2, 1, 1, 5],
      },
    ]);
  });

  it('admits while the window holds, counts only those, and sets the expiry once', async () => {
    const count = fixed();
    const keys = consumeKeys([count]);
    expect(await run(keys, call(7))).toEqual({
      held: false,
      counts: [7],
      oldest: [0],
      leased: [0],
      admitted: [7],
    });
    expect(await client.pexpiretime(count)).toBe(expiresAt);
    expect(await run(keys, call(5, { limits: [[limit({ expiresAt: expiresAt + 1 })]] }))).toMatchObject({
      counts: [10],
      admitted: [3],
    });
    expect(await run(keys, call(2))).toMatchObject({ counts: [10], admitted: [0] });
    expect(await client.get(count)).toBe('10');
    expect(await client.pexpiretime(count)).toBe(expiresAt);
    // A key far from its limit never touches its lease book.
    expect(await client.exists(keys[1]!)).toBe(0);
  });

  it('decides requests of several costs in arrival order, each admitted while every limit has room for it', async () => {
    const keys = consumeKeys([fixed()]);
    // 10 units: 5, then 1, 1; the next 5 does not fit in the 3 left, the 1s after it do.
    const mixed = await run(keys, call(0, { runs: [1, 5, 2, 1, 1, 5, 3, 1] }));
    expect(mixed).toMatchObject({ counts: [10], admitted: [1, 2, 0, 3] });
    expect(await run(keys, call(0, { runs: [1, 1] }))).toMatchObject({ counts: [10], admitted: [0] });
  });

  it('leases only when the window holds 1,024 more than asked, at most a sixteenth of that', async () => {
    const small = call(1, { leases: [terms({ lease: 500 })], limits: [[limit({ limit: 1_024 })]] });
    expect(await run(consumeKeys([fixed()]), small)).toMatchObject({
      counts: [1],
      leased: [0],
      admitted: [1],
    });
    const big = consumeKeys([fixed()]);
    const limits = [[limit({ limit: 10_000 })]];
    expect(
      await run(big, call(0, { leases: [terms({ lease: 5_000 })], limits, runs: [4, 1] })),
    ).toMatchObject({ counts: [4 + 624], leased: [624] });
    expect(await run(big, call(1, { leases: [terms({ lease: 10 })], limits }))).toMatchObject({
      counts: [4 + 624 + 1 + 10],
      leased: [10],
    });
    // The book counts what is leased and not settled, and expires with the count.
    expect(await client.hgetall(big[1]!)).toEqual({ p: '634', r: '0' });
    expect(await client.pexpiretime(big[1]!)).toBe(expiresAt);
  });

  it('takes settled units off the book and returned ones off the count', async () => {
    const keys = consumeKeys([fixed()]);
    const limits = [[limit({ limit: 10_000 })]];
    await run(keys, call(0, { leases: [terms({ lease: 100 })], limits }));
    expect(
      await run(keys, call(1, { leases: [terms({ settled: 100, returned: 60 })], limits })),
    ).toMatchObject({ counts: [41], admitted: [1] });
    expect(await client.hgetall(keys[1]!)).toEqual({ p: '0', r: '0' });
  });

  it('holds requests that do not fit while units are leased, publishing the counter on the channel it is given', async () => {
    const count = fixed();
    const keys = consumeKeys([count]);
    const heard: string[] = [];
    subscriber.on('message', (ch: string, message: string) => ch === channel && heard.push(message));
    await subscriber.subscribe(channel);
    const limits = [[limit({ limit: 2_000 })]];
    await run(keys, call(0, { leases: [terms({ lease: 100 })], limits }));
    await client.set(count, '2000'); // the rest of the window went to other replicas
    expect(await run(keys, call(3, { limits }))).toMatchObject({
      held: true,
      counts: [2_000],
      admitted: [0],
    });
    expect(
      (
        await waitFor(
          () => Promise.resolve(heard),
          (h) => h.length > 0,
          { timeoutMs: 2_000, everyMs: 5 },
        )
      ).value,
    ).toEqual([count]);
    expect(await client.hget(keys[1]!, 'r')).toBe(String(now));
    // Still held just before RECLAIM_WAIT_MS from the first reclaim, refused from then on.
    expect(await run(keys, call(1, { now: now + RECLAIM_WAIT_MS - 1, limits }))).toMatchObject({
      held: true,
      admitted: [0],
    });
    expect(await run(keys, call(1, { now: now + RECLAIM_WAIT_MS, limits }))).toMatchObject({
      held: false,
      admitted: [0],
    });
    // The holder settles, returning 40 unused: those fit without a hold, and the reclaim is over.
    expect(
      await run(keys, call(2, { leases: [terms({ settled: 100, returned: 40 })], limits })),
    ).toMatchObject({ held: false, counts: [1_962], admitted: [2] });
    expect(await client.hgetall(keys[1]!)).toEqual({ p: '0', r: '0' });
    await subscriber.unsubscribe(channel);
  });
});

describe('the consume script, several limits', () => {
  it('admits only what every limit holds, and counts each admitted request in all of them', async () => {
    const [a, b] = [fixed(), fixed()];
    const keys = consumeKeys([a, b]);
    const limits = [[limit({ limit: 5 }), limit({ limit: 3 })]];
    expect(await run(keys, call(2, { limits }))).toMatchObject({ counts: [2, 2], admitted: [2] });
    expect(await run(keys, call(4, { limits }))).toMatchObject({ counts: [3, 3], admitted: [1] });
    expect(await run(keys, call(1, { limits }))).toMatchObject({ counts: [3, 3], admitted: [0] });
    expect([await client.get(a), await client.get(b)]).toEqual(['3', '3']);
  });

  it('leases the same units in every limit, sized by the tightest, and only when every limit holds 1,024 more', async () => {
    const [a, b] = [fixed(), fixed()];
    await client.set(b, '5000'); // the second limit's window is shared with requests of an earlier plan
    const keys = consumeKeys([a, b]);
    const limits = [[limit({ limit: 100_000 }), limit({ limit: 6_600 })]];
    // The second holds 1,600: a lease of (1,600 - 1) / 16 = 99 units, in both counts.
    expect(await run(keys, call(1, { leases: [terms({ lease: 1_000 })], limits }))).toMatchObject({
      counts: [100, 5_100],
      leased: [99],
    });
    expect(await client.hget(consumeKeys([a])[1]!, 'p')).toBe('99');
    expect(await client.hget(consumeKeys([b])[1]!, 'p')).toBe('99');
    // Unused units go back to both counts.
    expect(
      await run(keys, call(0, { leases: [terms({ settled: 99, returned: 50 })], limits })),
    ).toMatchObject({ counts: [50, 5_050] });
    // Below 1,024 left in one limit: call by call.
    await client.set(b, '5600');
    expect(await run(keys, call(1, { leases: [terms({ lease: 1_000 })], limits }))).toMatchObject({
      counts: [51, 5_601],
      leased: [0],
    });
  });

  it('holds and asks back only for the limit that is full while its units are leased', async () => {
    const [a, b] = [fixed(), fixed()];
    const keys = consumeKeys([a, b]);
    const heard: string[] = [];
    const listener = (ch: string, message: string) => ch === channel && heard.push(message);
    subscriber.on('message', listener);
    await subscriber.subscribe(channel);
    const limits = [[limit({ limit: 1_000_000 }), limit({ limit: 2_000 })]];
    await run(keys, call(0, { leases: [terms({ lease: 50 })], limits }));
    await client.set(b, '2000');
    expect((await run(keys, call(1, { limits }))).held).toBe(true);
    expect(
      (
        await waitFor(
          () => Promise.resolve(heard),
          (h) => h.length > 0,
          { timeoutMs: 2_000, everyMs: 5 },
        )
      ).value,
    ).toEqual([b]);
    subscriber.off('message', listener);
    await subscriber.unsubscribe(channel);
  });
});

describe('the consume script, a key and its consumer', () => {
  const keyAndConsumer = (keyLimit: number, consumerLimit: number) => [
    [limit({ limit: keyLimit })],
    [limit({ limit: consumerLimit })],
  ];

  it('admits a request only when the key and the consumer both have room for its cost, and charges both', async () => {
    const [key, consumer] = [fixed(), fixed()];
    const keys = consumeKeys([key, consumer]);
    const limits = keyAndConsumer(10, 7);
    const both = { leases: [terms(), terms()], limits };
    expect(await run(keys, call(0, { ...both, runs: [1, 5] }))).toMatchObject({
      counts: [5, 5],
      admitted: [1],
    });
    // The consumer holds 2, the key 5: a cost of 3 fits the key only, and charges neither.
    expect(await run(keys, call(0, { ...both, runs: [1, 3] }))).toMatchObject({
      counts: [5, 5],
      admitted: [0],
    });
    expect([await client.get(key), await client.get(consumer)]).toEqual(['5', '5']);
    expect(await run(keys, call(0, { ...both, runs: [2, 1] }))).toMatchObject({
      counts: [7, 7],
      admitted: [2],
    });
  });

  it('leases to each subject what its own limits allow, and to none when a request was refused', async () => {
    const [key, consumer] = [fixed(), fixed()];
    const keys = consumeKeys([key, consumer]);
    const limits = keyAndConsumer(1_000_000, 20_000);
    const asked = [terms({ lease: 1_000 }), terms({ lease: 1_000 })];
    // The key holds plenty: 1,000. The consumer holds 20,000 - 1: a sixteenth, 1,249, asked 1,000.
    expect(await run(keys, call(1, { leases: asked, limits }))).toMatchObject({
      counts: [1_001, 1_001],
      leased: [1_000, 1_000],
    });
    await client.set(consumer, '19000');
    // The consumer holds 1,000: nothing to lease it, while the key still gets its lease.
    expect(await run(keys, call(1, { leases: asked, limits }))).toMatchObject({
      counts: [2_002, 19_001],
      leased: [1_000, 0],
    });
    await client.set(consumer, '20000');
    expect(await run(keys, call(1, { leases: asked, limits }))).toMatchObject({
      counts: [2_002, 20_000],
      leased: [0, 0],
      admitted: [0],
    });
  });

  it('settles and returns each subject’s units in its own counts', async () => {
    const [key, consumer] = [fixed(), fixed()];
    const keys = consumeKeys([key, consumer]);
    const limits = keyAndConsumer(100_000, 100_000);
    await run(keys, call(0, { leases: [terms({ lease: 30 }), terms({ lease: 500 })], limits }));
    expect([await client.get(key), await client.get(consumer)]).toEqual(['30', '500']);
    const back = await run(
      keys,
      call(0, {
        leases: [terms({ settled: 30, returned: 10 }), terms({ settled: 500, returned: 400 })],
        limits,
      }),
    );
    expect(back.counts).toEqual([20, 100]);
    expect([await client.hget(keys[1]!, 'p'), await client.hget(keys[3]!, 'p')]).toEqual(['0', '0']);
  });
});

describe('the consume script, a sliding limit', () => {
  it('counts the slots of the last period plus the current one, deleting older ones as it meets them', async () => {
    const count = sliding();
    const keys = consumeKeys([count]);
    const at = (slot: number, limitOf = 10) => [[limit({ limit: limitOf, slot })]];
    expect(await run(keys, call(4, { limits: at(1_000) }))).toMatchObject({
      counts: [4],
      oldest: [1_000],
      admitted: [4],
    });
    expect(await run(keys, call(4, { limits: at(1_000 + SLOTS) }))).toMatchObject({
      counts: [8],
      oldest: [1_000],
      admitted: [4],
    });
    // Slot 1,000 still counts at 1,000 + SLOTS: only 2 more fit.
    expect(await run(keys, call(4, { limits: at(1_000 + SLOTS) }))).toMatchObject({
      counts: [10],
      oldest: [1_000],
      admitted: [2],
    });
    // One slot later it no longer counts, and is deleted.
    expect(await run(keys, call(5, { limits: at(1_001 + SLOTS) }))).toMatchObject({
      counts: [10],
      oldest: [1_000 + SLOTS],
      admitted: [4],
    });
    expect(await client.hgetall(count)).toEqual({
      [String(1_000 + SLOTS)]: '6',
      [String(1_001 + SLOTS)]: '4',
    });
    expect(await client.pexpiretime(count)).toBe(expiresAt);
  });

  it('takes returned units off the slot they were leased in', async () => {
    const count = sliding();
    const keys = consumeKeys([count]);
    const limits = [[limit({ limit: 100_000, slot: 7 })]];
    expect(await run(keys, call(0, { leases: [terms({ lease: 200 })], limits }))).toMatchObject({
      counts: [200],
      oldest: [7],
      leased: [200],
    });
    expect(
      await run(keys, call(0, { leases: [terms({ settled: 200, returned: 150 })], limits })),
    ).toMatchObject({ counts: [50], oldest: [7] });
    expect(await client.hget(count, '7')).toBe('50');
  });
});
