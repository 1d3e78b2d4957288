// `npm run bench -- consume-args`: what the consume script's argument, one JSON document (consumeArgs,
// docs/decisions/0135), costs per script call on each side. In Node: the built `consumeArgs` and the
// `JSON.stringify` inside it, in the bench's own process (CPU ns per call). In Redis: `cjson.decode`
// of that document against `cmsgpack.unpack` of the same document packed (Redis ships both), timed in
// a script by Redis' TIME (ns per call). Two calls: one fixed limit, and a key's token bucket with its
// consumer's fixed limit and balance. BENCH_ROUNDS rounds (default 5), medians.
import path from 'node:path';
import { Redis } from 'ioredis';
import type * as ScriptModule from '../../src/limits/consume-script.ts';
import type { WindowLimit } from '../../src/limits/core/redis-twin.ts';
import type { BucketLimit } from '../../src/limits/core/token-bucket.lua.ts';
import { REDIS_URL, ROOT, env, positive } from '../lib/config.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { buildTollgate } from '../lib/services.ts';

const ROUNDS = positive(env.BENCH_ROUNDS, 5);
const NODE_CALLS = 200_000;
/** Short enough that the shared Redis is not held for long (a few tens of ms per script). */
const REDIS_CALLS = 5_000;

/** Decodes ARGV[1] ARGV[2] times each way; returns the µs of each, by Redis' clock. */
const DECODE_LUA = `
local n = tonumber(ARGV[2])
local packed = cmsgpack.pack(cjson.decode(ARGV[1]))
local function us() local t = redis.call('TIME') return tonumber(t[1]) * 1000000 + tonumber(t[2]) end
local a = us()
for _ = 1, n do cjson.decode(ARGV[1]) end
local b = us()
for _ = 1, n do cmsgpack.unpack(packed) end
return {b - a, us() - b, #packed}`;

const NOW = Date.UTC(2026, 0, 1);
const fixed = (limit: number, expiresAt: number): WindowLimit => ({
  algorithm: 'fixed',
  limit,
  expiresAt,
});
const BUCKET: BucketLimit = {
  algorithm: 'tokenBucket',
  limit: 100,
  rate: 10,
  periodMs: 1_000,
  replica: 'r1',
};
const CALLS: Record<string, ScriptModule.ConsumeCall> = {
  'one fixed limit': {
    now: NOW,
    reclaimChannel: 'tollgate:reclaim',
    leases: [{ lease: 64, settled: 12, returned: 0 }],
    limits: [[fixed(1_000, NOW + 60_000)]],
    known: [{ places: 12, marker: 'ab12cd' }],
    balances: [undefined],
    runs: [1, 1],
  },
  "a key's token bucket, its consumer's fixed limit and balance": {
    now: NOW,
    reclaimChannel: 'tollgate:reclaim',
    leases: [
      { lease: 0, settled: 0, returned: 0 },
      { lease: 64, settled: 3, returned: 0 },
    ],
    limits: [[BUCKET], [fixed(100_000, NOW + 3_600_000)]],
    known: [
      { units: 57, parts: 300, at: NOW, held: 0, marker: 'ab12cd' },
      { places: 300, marker: 'ef34' },
    ],
    balances: [
      undefined,
      {
        terms: { epoch: 3, window: 0, granted: 100_000, floor: 0, windowNow: 0, refillAmount: -1 },
        seen: { epoch: 3, window: 0, spent: 1_234 },
      },
    ],
    runs: [1, 1],
  },
};

/** CPU ns per call of `f`, after as many calls again unrecorded. */
function cpuNs(f: () => unknown): number {
  for (let i = 0; i < NODE_CALLS; i++) f();
  const started = process.cpuUsage();
  for (let i = 0; i < NODE_CALLS; i++) f();
  const { user, system } = process.cpuUsage(started);
  return ((user + system) * 1_000) / NODE_CALLS;
}

export async function consumeArgs(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const script = (await import(path.join(ROOT, 'dist/src/limits/consume-script.js'))) as typeof ScriptModule;
  const redis = new Redis(REDIS_URL);
  const rows: string[] = [];
  try {
    for (const [name, call] of Object.entries(CALLS)) {
      const json = script.consumeArgs(call)[0]!;
      const doc: unknown = JSON.parse(json);
      const each = {
        args: [] as number[],
        stringify: [] as number[],
        cjson: [] as number[],
        cmsgpack: [] as number[],
      };
      let packedBytes = 0;
      for (let round = 0; round < ROUNDS; round++) {
        each.args.push(cpuNs(() => script.consumeArgs(call)));
        each.stringify.push(cpuNs(() => JSON.stringify(doc)));
        const [cjsonUs, msgpackUs, bytes] = (await redis.eval(DECODE_LUA, 0, json, REDIS_CALLS)) as number[];
        each.cjson.push((cjsonUs! * 1_000) / REDIS_CALLS);
        each.cmsgpack.push((msgpackUs! * 1_000) / REDIS_CALLS);
        packedBytes = bytes!;
      }
      const cell = (xs: number[]) => `${fmt(median(xs))} (${xs.map((x) => fmt(x)).join(' / ')})`;
      rows.push(
        `| ${name} | ${Buffer.byteLength(json)} / ${packedBytes} | ${cell(each.args)} | ${cell(each.stringify)} | ${cell(each.cjson)} | ${cell(each.cmsgpack)} |`,
      );
    }
  } finally {
    redis.disconnect();
  }
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- consume-args\`: the consume script's argument for two calls; in Node the built \`consumeArgs\` and its \`JSON.stringify\` alone (CPU ns per call, ${fmt(NODE_CALLS)} calls after as many unrecorded); in Redis \`cjson.decode\` of that document and \`cmsgpack.unpack\` of it packed (ns per call by Redis' TIME, ${fmt(REDIS_CALLS)} calls in one script); ${ROUNDS} rounds, medians (each round in brackets).`,
    '',
    machine(),
    '',
    '| call | bytes, JSON / msgpack | Node: consumeArgs ns | Node: JSON.stringify ns | Redis: cjson.decode ns | Redis: cmsgpack.unpack ns |',
    '|---|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n');
}
