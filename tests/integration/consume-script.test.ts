import { Redis } from 'ioredis';
import { consumeArgs, consumeKeys, defineConsumeScript, RECLAIM_WAIT_MS, type ConsumeCall } from '../../src/limits/consume-script.js';
import { counterKey } from '../../src/limits/limiter-keys.js';
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
/** A fresh window's keys. */
function window(): readonly [string, string] {
  return consumeKeys(counterKey(prefix, `key_${counters++}`, 'hour', 0));
}

function call(over: Partial<ConsumeCall>): ConsumeCall {
  return { limit: 10, expiresAt, want: 1, lease: 0, settled: 0, returned: 0, now, reclaimChannel: channel, ...over };
}

afterAll(async () => {
  const keys = await client.keys(prefix + '*');
  if (keys.length > 0) await client.del(...keys);
  await Promise.all([client.quit(), subscriber.quit()]);
});

describe('the consume script', () => {
  it('passes every key it touches as KEYS, all with the key id as their hash tag', () => {
    const [count, book] = consumeKeys(counterKey('tg:', 'key_x', 'minute', 60_000));
    expect([count, book]).toEqual(['tg:{key_x}:minute:60000', 'tg:{key_x}:minute:60000:lease']);
    expect(consumeArgs(call({}))).toEqual([10, expiresAt, 1, 0, 0, 0, now, channel]);
  });

  it('admits while the window holds, counts only those, and sets the expiry once', async () => {
    const keys = window();
    expect(await consume(keys, call({ want: 7 }))).toEqual([7, 7, 0, 0]);
    expect(await client.pexpiretime(keys[0])).toBe(expiresAt);
    expect(await consume(keys, call({ want: 5, expiresAt: expiresAt + 1 }))).toEqual([10, 3, 0, 0]);
    expect(await consume(keys, call({ want: 2 }))).toEqual([10, 0, 0, 0]);
    expect(await client.get(keys[0])).toBe('10');
    expect(await client.pexpiretime(keys[0])).toBe(expiresAt);
    // A key far from its limit never touches its lease book.
    expect(await client.exists(keys[1])).toBe(0);
  });

  it('leases only when the window holds 1,024 more than asked, at most a sixteenth of that', async () => {
    const keys = window();
    expect(await consume(keys, call({ limit: 1_024, want: 1, lease: 500 }))).toEqual([1, 1, 0, 0]);
    const big = window();
    expect(await consume(big, call({ limit: 10_000, want: 4, lease: 5_000 }))).toEqual([4 + 624, 4, 624, 0]);
    expect(await consume(big, call({ limit: 10_000, want: 1, lease: 10 }))).toEqual([4 + 624 + 1 + 10, 1, 10, 0]);
    // The book counts what is leased and not settled, and expires with the count.
    expect(await client.hgetall(big[1])).toEqual({ p: '634', r: '0' });
    expect(await client.pexpiretime(big[1])).toBe(expiresAt);
  });

  it('takes settled places off the book and returned ones off the count', async () => {
    const keys = window();
    await consume(keys, call({ limit: 10_000, want: 0, lease: 100 }));
    expect(await consume(keys, call({ limit: 10_000, want: 1, settled: 100, returned: 60 }))).toEqual([41, 1, 0, 0]);
    expect(await client.hgetall(keys[1])).toEqual({ p: '0', r: '0' });
  });

  it('holds requests that do not fit while places are leased, publishing the counter on the channel it is given', async () => {
    const keys = window();
    const heard: string[] = [];
    subscriber.on('message', (ch: string, message: string) => ch === channel && heard.push(message));
    await subscriber.subscribe(channel);
    await consume(keys, call({ limit: 2_000, want: 0, lease: 100 }));
    await client.set(keys[0], '2000'); // the rest of the window went to other replicas
    expect(await consume(keys, call({ limit: 2_000, want: 3 }))).toEqual([2_000, 0, 0, 1]);
    expect((await waitFor(() => Promise.resolve(heard), (h) => h.length > 0, { timeoutMs: 2_000, everyMs: 5 })).value).toEqual([keys[0]]);
    expect(await client.hget(keys[1], 'r')).toBe(String(now));
    // Still held just before RECLAIM_WAIT_MS from the first reclaim, refused from then on.
    expect(await consume(keys, call({ limit: 2_000, want: 1, now: now + RECLAIM_WAIT_MS - 1 }))).toEqual([2_000, 0, 0, 1]);
    expect(await consume(keys, call({ limit: 2_000, want: 1, now: now + RECLAIM_WAIT_MS }))).toEqual([2_000, 0, 0, 0]);
    // The holder settles, returning 40 unused: those fit without a hold, and the reclaim is over.
    expect(await consume(keys, call({ limit: 2_000, want: 2, settled: 100, returned: 40 }))).toEqual([1_962, 2, 0, 0]);
    expect(await client.hgetall(keys[1])).toEqual({ p: '0', r: '0' });
    await subscriber.unsubscribe(channel);
  });
});
