// `npm run bench -- profile`: --cpu-prof of one Tollgate process under load, the top functions by self
// time during the measured load only. OTEL_* variables set for the bench are handed to Tollgate.
import fs from 'node:fs';
import path from 'node:path';
import { CONNECTIONS, DURATION, PORT, WARMUP, env, run } from '../lib/config.ts';
import { stopProc } from '../lib/processes.ts';
import { fmt, problemsNote } from '../lib/report.ts';
import {
  buildTollgate,
  createKey,
  ensurePlan,
  ensureTools,
  freshDatabase,
  runRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** CLOCK_MONOTONIC in microseconds: the clock V8 stamps profile samples with, the same in every process. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

// Where a frame's code comes from: Tollgate itself, a package, Node's own JS, or V8 pseudo-frames.
function origin(url: string): string {
  if (url === '') return '(V8/native)';
  if (url.startsWith('node:')) return 'node core';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const own = url.indexOf('/dist/');
  return own >= 0 ? 'tollgate' : url;
}

function shortUrl(url: string): string {
  const own = url.indexOf('/dist/');
  if (own >= 0) return url.slice(own + 1);
  const nm = url.lastIndexOf('node_modules/');
  return nm >= 0 ? url.slice(nm + 'node_modules/'.length) : url;
}

/**
 * Self time (µs) per function during the `[fromUs, toUs]` windows, named by function and where its code comes from
 * (no file or line: two builds' bundles name one function alike); `(idle)` among them.
 */
export function selfTimeByFunction(file: string, windows: readonly [number, number][]): Map<string, number> {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  let at = prof.startTime;
  prof.samples.forEach((id, i) => {
    const delta = prof.timeDeltas[i] ?? 0;
    at += delta;
    const f = byId.get(id)?.callFrame;
    if (f === undefined || !windows.some(([fromUs, toUs]) => at >= fromUs && at <= toUs)) return;
    const from = f.url === '' ? '' : ` ${origin(f.url) === 'node core' ? f.url : origin(f.url)}`;
    const name = f.functionName.startsWith('(')
      ? f.functionName
      : `\`${f.functionName || '(anonymous)'}\`${from}`;
    out.set(name, (out.get(name) ?? 0) + delta);
  });
  return out;
}

// Only samples inside [fromUs, toUs] count: start-up (module loading, migrations) is not the hot path.
function summariseProfile(file: string, fromUs: number, toUs: number, top = 25): string {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let at = prof.startTime;
  prof.samples.forEach((id, i) => {
    const delta = prof.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= fromUs && at <= toUs) selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  });
  if (selfUs.size === 0)
    throw new Error(`no samples between ${fromUs} and ${toUs} µs (profile starts at ${prof.startTime})`);
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idleIds = prof.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id);
  const idle = idleIds.reduce((s, id) => s + (selfUs.get(id) ?? 0), 0);
  const busy = total - idle;
  const fn = new Map<string, number>();
  const orig = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node || idleIds.includes(id)) continue;
    const f = node.callFrame;
    const name =
      `\`${f.functionName || '(anonymous)'}\` ${f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
    fn.set(name, (fn.get(name) ?? 0) + us);
    const o = f.url === '' && f.functionName.startsWith('(') ? f.functionName : origin(f.url);
    orig.set(o, (orig.get(o) ?? 0) + us);
  }
  const pct = (us: number) => `${((us * 100) / busy).toFixed(1)} %`;
  const sorted = (m: Map<string, number>, n: number) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
  return [
    `Busy ${fmt(busy / 1000)} ms of ${fmt(total / 1000)} ms sampled (idle ${((idle * 100) / total).toFixed(0)} %). Shares below are of busy time.`,
    '',
    '| where the code comes from | self time |',
    '|---|--:|',
    ...sorted(orig, 15).map(([k, v]) => `| ${k} | ${pct(v)} |`),
    '',
    `| top ${top} functions by self time | self time |`,
    '|---|--:|',
    ...sorted(fn, top).map(([k, v]) => `| ${k} | ${pct(v)} |`),
  ].join('\n');
}

export async function profile(): Promise<string> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await runRedis();
  await startBackend();
  const databaseUrl = await freshDatabase();
  const profDir = path.join(run.workDir, 'cpuprofile');
  const port = PORT.tollgateRedis;
  const mode = env.BENCH_PROFILE_MODE === 'embedded' ? 'embedded' : 'redis';
  const tg = await startTollgate({
    name: 'profile',
    port,
    mode,
    databaseUrl,
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
    // OTEL_* set for the bench reach the profiled process: what a traced request costs, by function.
    extraEnv: Object.fromEntries(
      Object.entries(env).filter(
        (e): e is [string, string] => e[0].startsWith('OTEL_') && e[1] !== undefined,
      ),
    ),
  });
  await ensurePlan(port);
  const secret = await createKey(port, 'profile');
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  const headers = { authorization: `Bearer ${secret}` };
  await wrk({ url, seconds: WARMUP, headers });
  const fromUs = monotonicUs();
  const load = await wrk({ url, seconds: DURATION, headers });
  const toUs = monotonicUs();
  await stopProc(tg, 20_000); // the profile is written while the process exits
  const files = fs.existsSync(profDir) ? fs.readdirSync(profDir).map((f) => path.join(profDir, f)) : [];
  if (files.length === 0)
    throw new Error('no .cpuprofile written: did Tollgate exit through process.exit on SIGTERM?');
  // With several processes (a cluster), the busiest profile is the one that served the load.
  const biggest = files.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0] as string;
  const body =
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`${mode === 'embedded' ? 'BENCH_PROFILE_MODE=embedded ' : ''}npm run bench -- profile\` (Tollgate ${mode === 'embedded' ? 'embedded' : 'Redis mode + Postgres'}, one process, \`node --cpu-prof\`; wrk -c${CONNECTIONS} for ${DURATION} s after a ${WARMUP} s warm-up: ${fmt(load.rps)} req/s while profiling). Only the samples taken during the measured load are counted; the whole profile is kept as ${biggest} (open it in Chrome DevTools).`,
      '',
      summariseProfile(biggest, fromUs, toUs),
    ].join('\n') + problemsNote([tg]);
  return body;
}
