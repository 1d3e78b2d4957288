import { Redis } from 'ioredis';
import { defineDropScript, dropArgs, dropKeys } from '../../src/usage/redis/drop-script.js';
import { emptyFailureLog, leftOutKey } from '../../src/usage/failure-log.js';
import { decodeUsage, encodeUsage } from '../../src/usage/redis/field-codec.js';
import { usageKeys } from '../../src/usage/redis/key-layout.js';
import { definePushScript, pushArgs, pushKeys, type PushCall } from '../../src/usage/redis/push-script.js';
import { defineReadScript, readArgs, readKeys } from '../../src/usage/redis/read-script.js';
import { defineSealScript, sealArgs, sealKeys } from '../../src/usage/redis/seal-script.js';
import { defineUnlockScript } from '../../src/usage/redis/unlock-script.js';
import { emptyKeyUsage } from '../../src/usage/usage.js';
import { failureEntry } from '../helpers/failure-entry.js';
import { RedisMonitor } from '../helpers/redis-monitor.js';
import { RedisServer } from '../helpers/redis-server.js';
import { REDIS_URL, testKeyPrefix } from '../helpers/services.js';

// The usage scripts alone, against a real Redis: no sink, no flusher, no timers.
const prefix = testKeyPrefix();
const client = new Redis(REDIS_URL);
let deployments = 0;
/** A deployment of its own (a fresh set of names), and the push script on it. */
const push = (layout = usageKeys(`${prefix}${deployments++}:`)) => ({
  layout,
  run: definePushScript(client, layout),
});

/** One key's usage as a push carries it: `requests` to `path`, all successful, `ms` in all. */
const pushed = (keyId: string, path: string, requests: number, ms: number) => {
  const usage = emptyKeyUsage();
  usage.endpoints.set(path, { requests, successful: requests, failed: 0, totalDurationMs: ms, cost: 0 });
  return { keyId, fields: encodeUsage(usage) };
};
const pushCall = (pushId: string, keys: PushCall['keys']): PushCall => ({ pushId, markerTtlS: 600, keys });

afterAll(async () => {
  const keys = await client.keys(prefix + '*');
  for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
  await client.quit();
});

describe('the push script', () => {
  it('names the dirty set, the marker and each live hash in KEYS, and the pairs by kind in ARGV', () => {
    const layout = usageKeys('tg:');
    const call = pushCall('p1', [pushed('key_a', '/a', 2, 1.5), pushed('key_b', '/b', 1, 2)]);
    expect(pushKeys(layout, call)).toEqual([
      'tg:{usage}:dirty',
      'tg:{usage}:push:p1',
      'tg:{usage}:live:key_a',
      'tg:{usage}:live:key_b',
    ]);
    expect(pushArgs(call)).toEqual([
      600,
      'key_a',
      2,
      1,
      0,
      'e|/a|r',
      2,
      'e|/a|s',
      2,
      'e|/a|d',
      1.5,
      'key_b',
      2,
      1,
      0,
      'e|/b|r',
      1,
      'e|/b|s',
      1,
      'e|/b|d',
      2,
    ]);
  });

  it('adds a push to the live hashes and the dirty set once, however often it is sent', async () => {
    const { layout, run } = push();
    const call = pushCall('p1', [pushed('key_a', '/a', 2, 1.25), pushed('key_b', '/b|x', 1, 3)]);
    expect(await run(call)).toBe(1);
    expect(await run(call)).toBe(0);
    expect(await client.hgetall(layout.live('key_a'))).toEqual({
      'e|/a|r': '2',
      'e|/a|s': '2',
      'e|/a|d': '1.25',
    });
    expect(await client.hgetall(layout.live('key_b'))).toEqual({
      'e|/b|x|r': '1',
      'e|/b|x|s': '1',
      'e|/b|x|d': '3',
    });
    expect((await client.smembers(layout.dirty)).sort()).toEqual(['key_a', 'key_b']);
    const ttl = await client.ttl(layout.marker('p1'));
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
  });

  it("sets a push's failure log entries once, however often it is sent, beside those of other pushes", async () => {
    const { layout, run } = push();
    const failing = (requestId: string) => {
      const usage = emptyKeyUsage();
      usage.endpoints.set('/a', { requests: 1, successful: 0, failed: 1, totalDurationMs: 1, cost: 0 });
      const failures = emptyFailureLog();
      const entry = failureEntry({ requestId });
      failures.entries.push(entry);
      failures.leftOut.set(leftOutKey(entry.atMs, null, 'backend_error'), 2);
      return { keyId: 'key_a', fields: encodeUsage({ ...usage, failures }) };
    };
    const first = pushCall('p1', [failing('r1')]);
    expect(await run(first)).toBe(1);
    // Resent after a lost answer (a Redis hang): the marker makes it a no-op.
    expect(await run(first)).toBe(0);
    await run(pushCall('p2', [failing('r2')]));
    const decoded = decodeUsage(Object.entries(await client.hgetall(layout.live('key_a'))).flat());
    expect(decoded.failures!.entries.map((e) => e.requestId).sort()).toEqual(['r1', 'r2']);
    expect([...decoded.failures!.leftOut.values()]).toEqual([4]);
    expect(decoded.endpoints.get('/a')!.requests).toBe(2);
  });

  it('adds to what earlier pushes left: counts as integers, summed times as fractions', async () => {
    const { layout, run } = push();
    await run(pushCall('p1', [pushed('key_a', '/a', 2, 1.25)]));
    await run(pushCall('p2', [pushed('key_a', '/a', 3, 2)]));
    await run(pushCall('p3', [pushed('key_a', '/a', 1, 0.5)]));
    expect(await client.hgetall(layout.live('key_a'))).toEqual({
      'e|/a|r': '6',
      'e|/a|s': '6',
      'e|/a|d': '3.75',
    });
  });
});

describe('the seal script', () => {
  it('names every live hash it renames and every batch hash it makes in KEYS', () => {
    const layout = usageKeys('tg:');
    const call = { batchId: 'b1', keyIds: ['key_a', 'key_b'] };
    expect(sealKeys(layout, call)).toEqual([
      'tg:{usage}:dirty',
      'tg:{usage}:batches',
      'tg:{usage}:batch:b1',
      'tg:{usage}:live:key_a',
      'tg:{usage}:batch:b1:key_a',
      'tg:{usage}:live:key_b',
      'tg:{usage}:batch:b1:key_b',
      'tg:{usage}:seals',
    ]);
    expect(sealArgs(call)).toEqual(['b1', 'key_a', 'key_b']);
  });

  it('moves the listed live hashes whole into a new batch; keys pushed since the list stay dirty', async () => {
    const { layout, run } = push();
    const seal = defineSealScript(client, layout);
    await run(pushCall('p1', [pushed('key_a', '/a', 2, 1), pushed('key_b', '/b', 1, 1)]));
    const listed = await client.smembers(layout.dirty);
    await run(pushCall('p2', [pushed('key_a', '/a', 1, 1), pushed('key_c', '/c', 1, 1)]));
    expect(await seal({ batchId: 'b1', keyIds: listed })).toBe(2);
    expect(await client.smembers(layout.batches)).toEqual(['b1']);
    expect((await client.smembers(layout.batch('b1'))).sort()).toEqual(['key_a', 'key_b']);
    // The push that came after the list is in the batch all the same: a live hash moves whole.
    expect(await client.hget(layout.batchHash('b1', 'key_a'), 'e|/a|r')).toBe('3');
    expect(await client.exists(layout.live('key_a'), layout.live('key_b'))).toBe(0);
    expect(await client.smembers(layout.dirty)).toEqual(['key_c']);
    expect(await client.hget(layout.live('key_c'), 'e|/c|r')).toBe('1');
  });

  it('makes no batch when the listed keys have nothing live (sealed meanwhile), and takes them off the dirty set', async () => {
    const { layout } = push();
    const seal = defineSealScript(client, layout);
    await client.sadd(layout.dirty, 'key_gone');
    expect(await seal({ batchId: 'b1', keyIds: ['key_gone'] })).toBe(0);
    expect(await client.exists(layout.dirty, layout.batches, layout.batch('b1'))).toBe(0);
  });
});

describe('the read script', () => {
  it('names the set and every hash it reads in KEYS, and the members it expects in ARGV', () => {
    const call = { set: 's', members: ['b1', 'b2'], hashes: ['h0', 'h1', 'h2'] };
    expect(readKeys(call)).toEqual(['s', 'h0', 'h1', 'h2']);
    expect(readArgs(call)).toEqual(['b1', 'b2']);
  });

  it('reads the hashes while the set holds exactly the members named, and says what it holds otherwise', async () => {
    const { layout } = push();
    const read = defineReadScript(client);
    await client.hset(layout.live('key_a'), 'e|/a|r', '1');
    await client.hset(layout.batchHash('b1', 'key_a'), 'e|/a|r', '2');
    const hashes = [layout.live('key_a'), layout.batchHash('b1', 'key_a')];
    // No batch yet: named none, read the live hash alone.
    expect(await read({ set: layout.batches, members: [], hashes: [layout.live('key_a')] })).toEqual([
      1,
      ['e|/a|r', '1'],
    ]);
    await client.sadd(layout.batches, 'b1');
    expect(await read({ set: layout.batches, members: [], hashes: [layout.live('key_a')] })).toEqual([
      0,
      ['b1'],
    ]);
    expect(await read({ set: layout.batches, members: ['b1'], hashes })).toEqual([
      1,
      ['e|/a|r', '1'],
      ['e|/a|r', '2'],
    ]);
    await client.sadd(layout.batches, 'b2');
    expect(await read({ set: layout.batches, members: ['b1', 'b9'], hashes })).toEqual([
      0,
      expect.arrayContaining(['b1', 'b2']),
    ]);
    // A hash that does not exist reads empty.
    expect(await read({ set: layout.dirty, members: [], hashes: [layout.live('key_none')] })).toEqual([
      1,
      [],
    ]);
  });
});

describe('the drop script', () => {
  it('names the batch hashes it deletes in KEYS', () => {
    const call = { batchId: 'b1', keyIds: ['key_a'], nowMs: 5 };
    expect(dropKeys(usageKeys('tg:'), call)).toEqual([
      'tg:{usage}:batches',
      'tg:{usage}:batch:b1',
      'tg:{usage}:flushed-at',
      'tg:{usage}:set-aside',
      'tg:{usage}:batch:b1:key_a',
    ]);
    expect(dropArgs(call)).toEqual(['b1', 5]);
  });

  it('removes a batch, its key set and hashes, leaves other batches, and records the flush time', async () => {
    const { layout } = push();
    const drop = defineDropScript(client, layout);
    await client.sadd(layout.batches, 'b1', 'b2');
    await client.sadd(layout.setAside, 'b1', 'b2');
    await client.sadd(layout.batch('b1'), 'key_a', 'key_b');
    await client.hset(layout.batchHash('b1', 'key_a'), 'e|/a|r', '1');
    await client.hset(layout.batchHash('b1', 'key_b'), 'e|/b|r', '1');
    await client.hset(layout.batchHash('b2', 'key_a'), 'e|/a|r', '1');
    await drop({ batchId: 'b1', keyIds: ['key_a', 'key_b'], nowMs: 1_234 });
    expect(
      await client.exists(
        layout.batch('b1'),
        layout.batchHash('b1', 'key_a'),
        layout.batchHash('b1', 'key_b'),
      ),
    ).toBe(0);
    expect(await client.smembers(layout.batches)).toEqual(['b2']);
    // A batch set aside and then applied is no longer counted as set aside.
    expect(await client.smembers(layout.setAside)).toEqual(['b2']);
    expect(await client.exists(layout.batchHash('b2', 'key_a'))).toBe(1);
    expect(await client.get(layout.flushedAt)).toBe('1234');
  });
});

describe('the unlock script', () => {
  it('deletes the lock only while it holds the caller’s token', async () => {
    const { layout } = push();
    const unlock = defineUnlockScript(client);
    await client.set(layout.lock, 'theirs');
    expect(await unlock(layout.lock, 'mine')).toBe(0);
    expect(await client.get(layout.lock)).toBe('theirs');
    expect(await unlock(layout.lock, 'theirs')).toBe(1);
    expect(await client.exists(layout.lock)).toBe(0);
  });
});

// A server of its own: MONITOR sees every command of the server, and only these scripts may run.
describe('every usage script', () => {
  let server: RedisServer;
  let own: Redis;
  let monitor: RedisMonitor;
  beforeAll(async () => {
    server = await RedisServer.start();
    own = new Redis(server.url);
    monitor = await RedisMonitor.start(server.url);
  });
  const shown = () => monitor.caughtUp(own);
  const scriptCalls = (from: number) =>
    monitor.commands
      .slice(from)
      .flatMap((c) => (c.args[0] === 'eval' || c.args[0] === 'evalsha' ? [c.args[0]] : []));

  afterAll(async () => {
    monitor.close();
    await own.quit();
    await server.destroy();
  });

  it('touches only keys passed in KEYS, all in the {usage} hash slot', async () => {
    const layout = usageKeys('tg:');
    const pushScript = definePushScript(own, layout);
    await pushScript(pushCall('p1', [pushed('key_a', '/a', 2, 1), pushed('key_b', '/b', 1, 1)]));
    await pushScript(pushCall('p1', [pushed('key_a', '/a', 2, 1)]));
    const keyIds = await own.smembers(layout.dirty);
    await defineSealScript(own, layout)({ batchId: 'b1', keyIds });
    const read = defineReadScript(own);
    await read({ set: layout.batches, members: [], hashes: [layout.live('key_a')] });
    await read({
      set: layout.batches,
      members: ['b1'],
      hashes: [layout.live('key_a'), layout.batchHash('b1', 'key_a')],
    });
    await read({
      set: layout.batch('b1'),
      members: keyIds,
      hashes: keyIds.map((id) => layout.batchHash('b1', id)),
    });
    await defineDropScript(own, layout)({ batchId: 'b1', keyIds, nowMs: 1 });
    await own.set(layout.lock, 't');
    await defineUnlockScript(own)(layout.lock, 't');
    await shown();

    // Each script call, with the keys it declared and those its commands touched.
    const calls: { declared: string[]; touched: string[] }[] = [];
    for (const { source, args } of monitor.commands) {
      if (source !== 'lua') {
        if (args[0] === 'eval' || args[0] === 'evalsha')
          calls.push({ declared: args.slice(3, 3 + Number(args[2])), touched: [] });
        continue;
      }
      // Every command these scripts run names its key first; RENAME names two.
      calls.at(-1)!.touched.push(...args.slice(1, args[0] === 'rename' ? 3 : 2));
    }
    expect(calls.filter((c) => c.touched.length > 0)).toHaveLength(8);
    for (const { declared, touched } of calls) {
      for (const key of touched) expect(declared).toContain(key);
      for (const key of declared) expect(key).toMatch(/^tg:\{usage\}:/);
    }
  });

  it('sends a script again when Redis has lost it (NOSCRIPT after a restart or SCRIPT FLUSH), and only then', async () => {
    const layout = usageKeys('tg2:');
    const pushScript = definePushScript(own, layout);
    await pushScript(pushCall('q1', [pushed('key_a', '/a', 1, 1)]));
    await own.script('FLUSH');
    const from = await shown();
    await pushScript(pushCall('q2', [pushed('key_a', '/a', 1, 1)]));
    await pushScript(pushCall('q3', [pushed('key_a', '/a', 1, 1)]));
    expect(await own.hget(layout.live('key_a'), 'e|/a|r')).toBe('3');
    await shown();
    expect(scriptCalls(from)).toEqual(['evalsha', 'eval', 'evalsha']);
  });

  it('does not send a script again for other errors: Redis out of memory is the caller’s to handle', async () => {
    const layout = usageKeys('tg3:');
    const pushScript = definePushScript(own, layout);
    await pushScript(pushCall('r1', [pushed('key_a', '/a', 1, 1)]));
    await own.config('SET', 'maxmemory', '1');
    try {
      const from = await shown();
      await expect(pushScript(pushCall('r2', [pushed('key_a', '/a', 1, 1)]))).rejects.toThrow(/^OOM /);
      await shown();
      expect(scriptCalls(from)).toEqual(['evalsha']);
    } finally {
      await own.config('SET', 'maxmemory', '0');
    }
  });
});
