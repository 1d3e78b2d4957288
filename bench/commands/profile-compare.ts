// `npm run bench -- profile-compare`: where one request's CPU goes, function by function, in two
// processes under the same load, side by side: self time per request (µs) from `node --cpu-prof`,
// CPU time per request of the whole process, and Redis commands per request (INFO commandstats of a
// private redis-server). Two comparisons (BENCH_PROFILE_COMPARE):
//   builds (default): a key within a huge plan, this build against BENCH_BASELINE's, in
//     BENCH_PROFILE_MODE (redis | embedded);
//   forged: a wrong-checksum secret flood (bench/forged-key.lua) against CORS preflights
//     (bench/preflight-per-request.lua), this build in Redis mode (`npm run bench -- forged-keys` times them);
//   settled: a JSON request settled from its answer against a fixed-cost one, this build in
//     BENCH_PROFILE_MODE (`npm run bench -- settle` times them).
// Both processes run side by side and are loaded in alternating rounds (BENCH_ROUNDS × BENCH_DURATION
// each), each profiled during its own loads only. Both use one private redis-server (their own key
// prefixes): the Redis commands counted during one side's loads include the other's idle background.
import fs from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import {
  BASELINE,
  CONNECTIONS,
  DB_NAME,
  DURATION,
  PORT,
  ROOT,
  ROUNDS,
  WARMUP,
  env,
  log,
  run,
} from '../lib/config.ts';
import { stopProc, treeCpuUs } from '../lib/processes.ts';
import { fmt, machine, problemsNote } from '../lib/report.ts';
import type { Proc } from '../lib/processes.ts';
import {
  buildTollgate,
  commandStats,
  createKey,
  ensurePlan,
  ensureTools,
  freshDatabase,
  privateRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { createSettlePlans } from './settle.ts';
import { wrk, type WrkOptions } from '../lib/wrk.ts';
import { monotonicUs, selfTimeByFunction } from './profile.ts';

const PREFLIGHT_SCRIPT = path.join(ROOT, 'bench/preflight-per-request.lua');
const FORGED_SCRIPT = path.join(ROOT, 'bench/forged-key.lua');

interface Side {
  readonly label: string;
  readonly main?: string;
  readonly mode: 'embedded' | 'redis';
  /** The load's wrk options but its duration, once the process is ready. */
  readonly load: (port: number) => Promise<Omit<WrkOptions, 'seconds'>>;
  readonly extraEnv?: Record<string, string>;
}

interface Measured {
  readonly side: Side;
  readonly requests: number;
  readonly rps: number;
  readonly cpuUsPerRequest: number;
  readonly redisPerRequest: number;
  /** Redis command → calls during the load. */
  readonly redisCommands: Map<string, number>;
  /** Function → self µs during the load. */
  readonly self: Map<string, number>;
  readonly proc: Proc;
}

const keyLoad = async (port: number): Promise<Omit<WrkOptions, 'seconds'>> => {
  await ensurePlan(port);
  const secret = await createKey(port, 'profile-compare');
  return { url: `http://127.0.0.1:${port}/bench/item?id=42`, headers: { authorization: `Bearer ${secret}` } };
};

function sides(): Side[] {
  const cors = { CORS_ALLOWED_ORIGINS: 'https://app.example.com' };
  if (env.BENCH_PROFILE_COMPARE === 'forged') {
    const url = (port: number) => `http://127.0.0.1:${port}/bench/item?id=42`;
    return [
      {
        label: 'preflight',
        mode: 'redis',
        extraEnv: cors,
        load: (p) => Promise.resolve({ url: url(p), script: PREFLIGHT_SCRIPT }),
      },
      {
        label: 'wrong checksum',
        mode: 'redis',
        extraEnv: cors,
        load: (p) => Promise.resolve({ url: url(p), script: FORGED_SCRIPT }),
      },
    ];
  }
  if (env.BENCH_PROFILE_COMPARE === 'settled') {
    const settledLoad = (plan: 'fixed-cost' | 'settled') => async (port: number) => {
      await createSettlePlans(port);
      const secret = await createKey(port, `profile-${plan}`, true, `bench-${plan}`);
      return { url: `http://127.0.0.1:${port}/bench/usage`, headers: { authorization: `Bearer ${secret}` } };
    };
    const mode = env.BENCH_PROFILE_MODE === 'embedded' ? 'embedded' : 'redis';
    return [
      { label: 'fixed cost', mode, load: settledLoad('fixed-cost') },
      { label: 'settled', mode, load: settledLoad('settled') },
    ];
  }
  if (BASELINE === undefined)
    throw new Error('profile-compare: set BENCH_BASELINE (or BENCH_PROFILE_COMPARE=forged or settled)');
  const main = path.join(BASELINE, 'dist/src/main.js');
  if (!fs.existsSync(main)) throw new Error(`BENCH_BASELINE: ${main} does not exist (build it there first)`);
  const mode = env.BENCH_PROFILE_MODE === 'embedded' ? 'embedded' : 'redis';
  return [
    { label: 'this build', mode, load: keyLoad },
    { label: `build ${path.basename(BASELINE)}`, main, mode, load: keyLoad },
  ];
}

/** A side's process, ready and warmed up, and what its loads have added up to so far. */
interface Running {
  readonly side: Side;
  readonly proc: Proc;
  readonly profDir: string;
  readonly load: Omit<WrkOptions, 'seconds'>;
  readonly windows: [number, number][];
  readonly redisCommands: Map<string, number>;
  requests: number;
  cpuUs: number;
}

async function start(side: Side, index: number, redisUrl: string): Promise<Running> {
  const port = index === 0 ? PORT.tollgateRedis : PORT.tollgateRedisBaseline;
  const profDir = path.join(run.workDir, `cpuprofile-${index}`);
  const proc = await startTollgate({
    name: `profile-${index}`,
    port,
    mode: side.mode,
    main: side.main,
    databaseUrl: side.mode === 'redis' ? await freshDatabase(`${DB_NAME}_profile_${index}`) : undefined,
    redisUrl,
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
    extraEnv: { ...side.extraEnv, REDIS_KEY_PREFIX: `bench-profile-${index}:` },
  });
  const load = await side.load(port);
  await wrk({ ...load, seconds: WARMUP });
  return { side, proc, profDir, load, windows: [], redisCommands: new Map(), requests: 0, cpuUs: 0 };
}

/** One load of `DURATION` on `r`: its requests, CPU time, Redis commands and profile window added to its own. */
async function loadOnce(r: Running, redis: Redis): Promise<void> {
  const [before, cpuBefore, fromUs] = [
    await commandStats(redis),
    treeCpuUs(r.proc.child.pid!),
    monotonicUs(),
  ];
  const result = await wrk({ ...r.load, seconds: DURATION });
  const [toUs, cpuAfter, after] = [monotonicUs(), treeCpuUs(r.proc.child.pid!), await commandStats(redis)];
  // The INFO read before is the bench's own.
  after.set('info', (after.get('info') ?? 0) - 1);
  for (const [command, calls] of after) {
    const added = calls - (before.get(command) ?? 0);
    if (added > 0) r.redisCommands.set(command, (r.redisCommands.get(command) ?? 0) + added);
  }
  r.requests += result.requests;
  r.cpuUs += cpuAfter - cpuBefore;
  r.windows.push([fromUs, toUs]);
  log(`${r.side.label}: ${fmt(result.rps)} req/s`);
}

async function finish(r: Running): Promise<Measured> {
  await stopProc(r.proc, 20_000); // the profile is written while the process exits
  const file = fs.readdirSync(r.profDir).map((f) => path.join(r.profDir, f))[0];
  if (file === undefined) throw new Error(`no .cpuprofile written for ${r.side.label}`);
  return {
    side: r.side,
    requests: r.requests,
    rps: r.requests / (ROUNDS * DURATION),
    cpuUsPerRequest: r.cpuUs / r.requests,
    redisPerRequest: [...r.redisCommands.values()].reduce((x, y) => x + y, 0) / r.requests,
    redisCommands: r.redisCommands,
    self: selfTimeByFunction(file, r.windows),
    proc: r.proc,
  };
}

export async function profileCompare(): Promise<string> {
  ensureTools(['wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const compared = sides();
  const redisUrl = await privateRedis();
  run.redisUrl = redisUrl;
  await startBackend();
  const running = [await start(compared[0]!, 0, redisUrl), await start(compared[1]!, 1, redisUrl)];
  const redis = new Redis(redisUrl);
  try {
    // Alternating, as the other benches' rounds: a machine that slows down weighs on both alike.
    for (let round = 0; round < ROUNDS; round++)
      for (const r of round % 2 === 0 ? running : [...running].reverse()) await loadOnce(r, redis);
  } finally {
    redis.disconnect();
  }
  const measured = [await finish(running[0]!), await finish(running[1]!)];
  const [a, b] = measured as [Measured, Measured];
  const perRequest = (m: Measured, fn: string) => (m.self.get(fn) ?? 0) / m.requests;
  const names = new Set([...a.self.keys(), ...b.self.keys()]);
  names.delete('(idle)');
  const rows = [...names]
    .map((fn) => ({ fn, a: perRequest(a, fn), b: perRequest(b, fn) }))
    .sort((x, y) => Math.abs(y.a - y.b) - Math.abs(x.a - x.b))
    .slice(0, 40);
  // Tollgate's bundle holds its packages too; the rest is Node's own JavaScript and native code.
  const fromOwnBundle = (fn: string) => fn.endsWith(' tollgate') || fn.includes(' wasm:');
  const own = (m: Measured) =>
    [...m.self].reduce((s, [fn, us]) => (fromOwnBundle(fn) ? s + us : s), 0) / m.requests;
  const busy = (m: Measured) =>
    [...m.self].reduce((s, [fn, us]) => (fn === '(idle)' ? s : s + us), 0) / m.requests;
  return (
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- profile-compare\`${env.BENCH_PROFILE_COMPARE === 'forged' || env.BENCH_PROFILE_COMPARE === 'settled' ? ` with BENCH_PROFILE_COMPARE=${env.BENCH_PROFILE_COMPARE}` : ` with BENCH_BASELINE=${BASELINE}, ${a.side.mode}`} (one process at a time, \`node --cpu-prof\`, wrk -c${CONNECTIONS} for ${DURATION} s after a ${WARMUP} s warm-up; only the samples of the measured load count).`,
      '',
      machine(),
      '',
      `| | ${a.side.label} | ${b.side.label} | ÷ |`,
      '|---|--:|--:|--:|',
      `| req/s while profiled | ${fmt(a.rps)} | ${fmt(b.rps)} | ${(a.rps / b.rps).toFixed(2)}× |`,
      `| CPU µs per request (the process) | ${fmt(a.cpuUsPerRequest, 1)} | ${fmt(b.cpuUsPerRequest, 1)} | ${(a.cpuUsPerRequest / b.cpuUsPerRequest).toFixed(2)}× |`,
      `| profiled busy µs per request | ${fmt(busy(a), 1)} | ${fmt(busy(b), 1)} | ${(busy(a) / busy(b)).toFixed(2)}× |`,
      `| of which Tollgate's bundle (its code and packages), µs per request | ${fmt(own(a), 1)} | ${fmt(own(b), 1)} | ${(own(a) / own(b)).toFixed(2)}× |`,
      `| Redis commands per request | ${a.redisPerRequest.toFixed(4)} | ${b.redisPerRequest.toFixed(4)} | |`,
      '',
      `| Redis command | ${a.side.label}, calls per request | ${b.side.label} |`,
      '|---|--:|--:|',
      ...[...new Set([...a.redisCommands.keys(), ...b.redisCommands.keys()])].map(
        (c) =>
          `| ${c} | ${((a.redisCommands.get(c) ?? 0) / a.requests).toFixed(4)} | ${((b.redisCommands.get(c) ?? 0) / b.requests).toFixed(4)} |`,
      ),
      '',
      `| function (the ${rows.length} that differ most) | ${a.side.label}, self µs per request | ${b.side.label} | difference |`,
      '|---|--:|--:|--:|',
      ...rows.map((r) => `| ${r.fn} | ${r.a.toFixed(2)} | ${r.b.toFixed(2)} | ${(r.a - r.b).toFixed(2)} |`),
    ].join('\n') + problemsNote(measured.map((m) => m.proc))
  );
}
