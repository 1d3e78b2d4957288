import { Redis } from 'ioredis';
import { consumeArgs, consumeKeys, defineConsumeScript, RECLAIM_WAIT_MS, type ConsumeCall, type ConsumeLimit } from '../../src/limits/consume-script.js';
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
/** A fresh fixed window's count key. */
function fixed(): string {
  return counterKey(prefix, `key_${counters++}`, 'hour', 0);
}
/** A fresh sliding limit's count key. */
function sliding(): string {
  return slidingKey(prefix, `key_${counters++}`, 'minute');
}

const limit = (over: Partial<ConsumeLimit> = {}): ConsumeLimit => ({ limit: 10, expiresAt, slot: -1, ...over });

function call(over: Partial<ConsumeCall>): ConsumeCall {
  return { want: 1, lease: 0, settled: 0, returned: 0, now, reclaimChannel: channel, limits: [limit()], ...over };
}

afterAll(async () => {
  const keys = await client.keys(prefix + '*');
  if (keys.length > 0) await client.del(...keys);
  await Promise.all([client.quit(), subscriber.quit()]);
});

describe('the consume script, one fixed limit', () => {
  it('passes every key it touches as KEYS, all with the key id as their hash tag', () => {
    const keys = consumeKeys([counterKey('tg:', 'key_x', 'minute', 60_000), slidingKey('tg:', 'key_x', 'hour')]);
    expect(keys).toEqual(['tg:{key_x}:minute:60000', 'tg:{key_x}:minute:60000:lease', 'tg:{key_x}:sliding:hour', 'tg:{key_x}:sliding:hour:lease']);
    expect(consumeArgs(call({ limits: [limit(), limit({ limit: 5, slot: 42 })] }))).toEqual([1, 0, 0, 0, now, channel, 10, expiresAt, -1, 5, expiresAt, 42]);
  });

  it('admits while the window holds, counts only those, and sets the expiry once', async () => {
    const count = fixed();
    const keys = consumeKeys([count]);
    expect(await consume(keys, call({ want: 7 }))).toEqual([7, 0, 0, 7, 0]);
    expect(await client.pexpiretime(count)).toBe(expiresAt);
    expect(await consume(keys, call({ want: 5, limits: [limit({ expiresAt: expiresAt + 1 })] }))).toEqual([3, 0, 0, 10, 0]);
    expect(await consume(keys, call({ want: 2 }))).toEqual([0, 0, 0, 10, 0]);
    expect(await client.get(count)).toBe('10');
    expect(await client.pexpiretime(count)).toBe(expiresAt);
    // A key far from its limit never touches its lease book.
    expect(await client.exists(keys[1]!)).toBe(0);
  });

  it('leases only when the window holds 1,024 more than asked, at most a sixteenth of that', async () => {
    expect(await consume(consumeKeys([fixed()]), call({ want: 1, lease: 500, limits: [limit({ limit: 1_024 })] }))).toEqual([1, 0, 0, 1, 0]);
    const big = consumeKeys([fixed()]);
    expect(await consume(big, call({ want: 4, lease: 5_000, limits: [limit({ limit: 10_000 })] }))).toEqual([4, 624, 0, 4 + 624, 0]);
    expect(await consume(big, call({ want: 1, lease: 10, limits: [limit({ limit: 10_000 })] }))).toEqual([1, 10, 0, 4 + 624 + 1 + 10, 0]);
    // The book counts what is leased and not settled, and expires with the count.
    expect(await client.hgetall(big[1]!)).toEqual({ p: '634', r: '0' });
    expect(await client.pexpiretime(big[1]!)).toBe(expiresAt);
  });

  it('takes settled places off the book and returned ones off the count', async () => {
    const keys = consumeKeys([fixed()]);
    await consume(keys, call({ want: 0, lease: 100, limits: [limit({ limit: 10_000 })] }));
    expect(await consume(keys, call({ want: 1, settled: 100, returned: 60, limits: [limit({ limit: 10_000 })] }))).toEqual([1, 0, 0, 41, 0]);
    expect(await client.hgetall(keys[1]!)).toEqual({ p: '0', r: '0' });
  });

  it('holds requests that do not fit while places are leased, publishing the counter on the channel it is given', async () => {
    const count = fixed();
    const keys = consumeKeys([count]);
    const heard: string[] = [];
    subscriber.on('message', (ch: string, message: string) => ch === channel && heard.push(message));
    await subscriber.subscribe(channel);
    const two = [limit({ limit: 2_000 })];
    await consume(keys, call({ want: 0, lease: 100, limits: two }));
    await client.set(count, '2000'); // the rest of the window went to other replicas
    expect(await consume(keys, call({ want: 3, limits: two }))).toEqual([0, 0, 1, 2_000, 0]);
    expect((await waitFor(() => Promise.resolve(heard), (h) => h.length > 0, { timeoutMs: 2_000, everyMs: 5 })).value).toEqual([count]);
    expect(await client.hget(keys[1]!, 'r')).toBe(String(now));
    // Still held just before RECLAIM_WAIT_MS from the first reclaim, refused from then on.
    expect(await consume(keys, call({ want: 1, now: now + RECLAIM_WAIT_MS - 1, limits: two }))).toEqual([0, 0, 1, 2_000, 0]);
    expect(await consume(keys, call({ want: 1, now: now + RECLAIM_WAIT_MS, limits: two }))).toEqual([0, 0, 0, 2_000, 0]);
    // The holder settles, returning 40 unused: those fit without a hold, and the reclaim is over.
    expect(await consume(keys, call({ want: 2, settled: 100, returned: 40, limits: two }))).toEqual([2, 0, 0, 1_962, 0]);
    expect(await client.hgetall(keys[1]!)).toEqual({ p: '0', r: '0' });
    await subscriber.unsubscribe(channel);
  });
});

describe('the consume script, several limits', () => {
  it('admits only what every limit holds, and counts each admitted request in all of them', async () => {
    const [a, b] = [fixed(), fixed()];
    const keys = consumeKeys([a, b]);
    const limits = [limit({ limit: 5 }), limit({ limit: 3 })];
    expect(await consume(keys, call({ want: 2, limits }))).toEqual([2, 0, 0, 2, 0, 2, 0]);
    expect(await consume(keys, call({ want: 4, limits }))).toEqual([1, 0, 0, 3, 0, 3, 0]);
    expect(await consume(keys, call({ want: 1, limits }))).toEqual([0, 0, 0, 3, 0, 3, 0]);
    expect([await client.get(a), await client.get(b)]).toEqual(['3', '3']);
  });

  it('leases the same places in every limit, sized by the tightest, and only when every limit holds 1,024 more', async () => {
    const [a, b] = [fixed(), fixed()];
    await client.set(b, '5000'); // the second limit's window is shared with requests of an earlier plan
    const keys = consumeKeys([a, b]);
    const limits = [limit({ limit: 100_000 }), limit({ limit: 6_600 })];
    // The second holds 1,600: a lease of (1,600 - 1) / 16 = 99 places, in both counts.
    expect(await consume(keys, call({ want: 1, lease: 1_000, limits }))).toEqual([1, 99, 0, 100, 0, 5_100, 0]);
    expect(await client.hget(consumeKeys([a])[1]!, 'p')).toBe('99');
    expect(await client.hget(consumeKeys([b])[1]!, 'p')).toBe('99');
    // Unused places go back to both counts.
    expect(await consume(keys, call({ want: 0, settled: 99, returned: 50, limits }))).toEqual([0, 0, 0, 50, 0, 5_050, 0]);
    // Below 1,024 left in one limit: call by call.
    await client.set(b, '5600');
    expect(await consume(keys, call({ want: 1, lease: 1_000, limits }))).toEqual([1, 0, 0, 51, 0, 5_601, 0]);
  });

  it('holds and asks back only for the limit that is full while its places are leased', async () => {
    const [a, b] = [fixed(), fixed()];
    const keys = consumeKeys([a, b]);
    const heard: string[] = [];
    const listener = (ch: string, message: string) => ch === channel && heard.push(message);
    subscriber.on('message', listener);
    await subscriber.subscribe(channel);
    const limits = [limit({ limit: 1_000_000 }), limit({ limit: 2_000 })];
    await consume(keys, call({ want: 0, lease: 50, limits }));
    await client.set(b, '2000');
    expect((await consume(keys, call({ want: 1, limits })))[2]).toBe(1);
    expect((await waitFor(() => Promise.resolve(heard), (h) => h.length > 0, { timeoutMs: 2_000, everyMs: 5 })).value).toEqual([b]);
    subscriber.off('message', listener);
    await subscriber.unsubscribe(channel);
  });
});

describe('the consume script, a sliding limit', () => {
  it('counts the slots of the last period plus the current one, deleting older ones as it meets them', async () => {
    const count = sliding();
    const keys = consumeKeys([count]);
    const at = (slot: number, limitOf = 10) => [limit({ limit: limitOf, slot })];
    expect(await consume(keys, call({ want: 4, limits: at(1_000) }))).toEqual([4, 0, 0, 4, 1_000]);
    expect(await consume(keys, call({ want: 4, limits: at(1_000 + SLOTS) }))).toEqual([4, 0, 0, 8, 1_000]);
    // Slot 1,000 still counts at 1,000 + SLOTS: only 2 more fit.
    expect(await consume(keys, call({ want: 4, limits: at(1_000 + SLOTS) }))).toEqual([2, 0, 0, 10, 1_000]);
    // One slot later it no longer counts, and is deleted.
    expect(await consume(keys, call({ want: 5, limits: at(1_001 + SLOTS) }))).toEqual([4, 0, 0, 10, 1_000 + SLOTS]);
    expect(await client.hgetall(count)).toEqual({ [String(1_000 + SLOTS)]: '6', [String(1_001 + SLOTS)]: '4' });
    expect(await client.pexpiretime(count)).toBe(expiresAt);
  });

  it('takes returned places off the slot they were leased in', async () => {
    const count = sliding();
    const keys = consumeKeys([count]);
    const limits = [limit({ limit: 100_000, slot: 7 })];
    expect(await consume(keys, call({ want: 0, lease: 200, limits }))).toEqual([0, 200, 0, 200, 7]);
    expect(await consume(keys, call({ want: 0, settled: 200, returned: 150, limits }))).toEqual([0, 0, 0, 50, 7]);
    expect(await client.hget(count, '7')).toBe('50');
  });
});
