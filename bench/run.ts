// Tollgate's load benchmark: Tollgate against the gateways a user would pick instead, on one machine,
// in one run. Node 24 runs this file directly (type stripping); it is one file because the project's
// tsconfig cannot type-check relative `.ts` imports that Node could run.
//
//   npm run bench                 the comparison table (backend, nginx, HAProxy, Express, Fastify, Tollgate ×3)
//   npm run bench -- scale        memory for 100k cached keys, 10k keys in rotation, replicas 1 → 2 → 4
//   npm run bench -- cost         Redis commands per proxied request, Postgres writes per 10,000 requests
//   npm run bench -- profile      --cpu-prof of one Tollgate process under load, top self-time functions
//   npm run bench -- engines      undici Pool.stream against Pool.dispatch, forwarding alone
//   npm run bench -- concurrency  CPU per request at wrk -c50, 13, 4, 1: Tollgate with and without a plan, a bare forwarder
//
// Environment (all optional): BENCH_DURATION (s, default 10), BENCH_ROUNDS (3), BENCH_WARMUP (s, 3),
// BENCH_CONNECTIONS (50), BENCH_TARGETS (comma-separated ids to run), BENCH_REDIS_URL
// (redis://127.0.0.1:6379/15: the bench owns DB 15 and flushes it), BENCH_PG_URL
// (postgres://postgres@127.0.0.1:5432), BENCH_PROFILE_MODE (redis | embedded), BENCH_SCALE_KEYS (100000), BENCH_ROTATION_KEYS (10000),
// BENCH_REPLICAS (1,2,4), BENCH_REPLICA_WARMUP (s, 10), BENCH_CONCURRENCY (50,13,4,1), BENCH_PIN=1 (table: each target on the last CPU, wrk and backend on the others), BENCH_SKIP_BUILD=1, BENCH_NO_DOCS=1 (do not rewrite docs/performance.md),
// BENCH_NICE (e.g. -10: every target and wrk run at that priority, so other work on a shared machine
// takes less of the measured CPU; off by default because it slows everything else while it runs).
// Everything started is stopped on exit, failure or Ctrl-C; a run killed with SIGKILL is cleaned up
// by the next run (process groups recorded in /tmp/tollgate-bench/pids.json).
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const TOLLGATE_MAIN = path.join(ROOT, 'dist/src/main.js');
const DOCS = path.join(ROOT, 'docs/performance.md');
const RESULTS = path.join(ROOT, 'bench/results');
const STATE_DIR = '/tmp/tollgate-bench';

const env = process.env;
const DURATION = positive(env.BENCH_DURATION, 10);
const ROUNDS = positive(env.BENCH_ROUNDS, 3);
const WARMUP = positive(env.BENCH_WARMUP, 3);
/** Seconds of load per replica before a replica row is measured (scale). */
const REPLICA_WARMUP = positive(env.BENCH_REPLICA_WARMUP, 10);
const CONNECTIONS = positive(env.BENCH_CONNECTIONS, 50);
const THREADS = 2;
const NICE = /^-?\d+$/.test(env.BENCH_NICE ?? '') ? String(env.BENCH_NICE) : undefined;
const CPU_COUNT = os.cpus().length;
/** Where pinned runs put what is measured (the last CPU) and what loads it (the others). */
const TARGET_CPUS = String(CPU_COUNT - 1);
const CLIENT_CPUS = CPU_COUNT === 2 ? '0' : `0-${CPU_COUNT - 2}`;
/** BENCH_PIN=1: the comparison table with each target on TARGET_CPUS, wrk and the backend on CLIENT_CPUS. */
const PIN = env.BENCH_PIN === '1' && CPU_COUNT >= 2;
const REDIS_URL = env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
/** The Redis of this run: REDIS_URL, or a private redis-server under BENCH_NICE (see runRedis). */
let redisUrl = REDIS_URL;
const PG_URL = env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
const DB_NAME = 'tollgate_bench';
const ROOT_TOKEN = 'bench-root-token-0123456789abcdef';
const PEER_SECRET = 'bench-secret-3b9f0c2d';
const PLAN_ID = 'bench-unlimited';
// Far above anything wrk can send in an hour: every target counts the key but never refuses.
const HUGE_LIMIT = 1_000_000_000_000;

const PORT = {
  backend: 18080,
  nginx: 18081,
  haproxy: 18082,
  express: 18083,
  fastify: 18084,
  tollgateEmbedded: 18085,
  tollgateRedis: 18086,
  tollgateRedisW2: 18087,
  replicaBase: 18090,
  opsOffset: 100,
} as const;
const BACKEND_URL = `http://127.0.0.1:${PORT.backend}`;

function positive(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

// ---------------------------------------------------------------------------------------------
// Processes: each child leads its own process group, so nginx workers and Tollgate's cluster
// workers stop with it.

interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logFile: string;
  exited: boolean;
}

const procs: Proc[] = [];
const loadAtStart = os.loadavg().map((l) => l.toFixed(2)).join(' ');
let workDir = '';

function recordPids(): void {
  const live = procs.filter((p) => !p.exited && p.child.pid !== undefined).map((p) => ({ pid: p.child.pid, marker: workDir }));
  fs.writeFileSync(path.join(STATE_DIR, 'pids.json'), JSON.stringify(live));
}

// A previous run killed with SIGKILL could not clean up; its groups are stopped here, but only
// processes whose command line still names that run's work directory (a pid may have been reused).
function reapPreviousRun(): void {
  fs.mkdirSync(STATE_DIR, { recursive: true });
  const file = path.join(STATE_DIR, 'pids.json');
  if (!fs.existsSync(file)) return;
  const stale = JSON.parse(fs.readFileSync(file, 'utf8')) as { pid: number; marker: string }[];
  for (const { pid, marker } of stale) {
    const cmdline = readFileOr(`/proc/${pid}/cmdline`, '').replaceAll('\0', ' ');
    const environ = readFileOr(`/proc/${pid}/environ`, '');
    if (marker && (cmdline.includes(marker) || environ.includes(marker))) {
      log(`stopping process group ${pid} left by an interrupted run`);
      killGroup(pid, 'SIGKILL');
    }
  }
  fs.rmSync(file, { force: true });
}

function readFileOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function startProc(name: string, command: string, args: string[], extraEnv: Record<string, string> = {}): Proc {
  const logFile = path.join(workDir, `${name}.log`);
  const fd = fs.openSync(logFile, 'a');
  // BENCH_RUN_DIR marks the process as ours for reapPreviousRun, whatever its command line.
  const childEnv = { ...baseEnv(), ...extraEnv, BENCH_RUN_DIR: workDir };
  const [cmd, argv] = niced(command, args);
  const child = spawn(cmd, argv, { cwd: ROOT, detached: true, stdio: ['ignore', fd, fd], env: childEnv });
  fs.closeSync(fd);
  niceSession(child.pid);
  const proc: Proc = { name, child, logFile, exited: false };
  child.on('exit', () => {
    proc.exited = true;
  });
  procs.push(proc);
  recordPids();
  return proc;
}

function niced(command: string, args: string[]): [string, string[]] {
  return NICE === undefined ? [command, args] : ['nice', ['-n', NICE, command, ...args]];
}

// With autogroup scheduling (Debian's default) CPU is shared between sessions first and nice only
// ranks processes inside one; every child here leads its own session, so its session gets the nice.
function niceSession(pid: number | undefined): void {
  if (NICE === undefined || pid === undefined) return;
  try {
    fs.writeFileSync(`/proc/${pid}/autogroup`, NICE);
  } catch {
    // No autogroup support: the plain nice above is all there is.
  }
}

// Children never inherit the caller's service settings by accident: each gets exactly what it needs.
function baseEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || /^(PORT|OPS_PORT|HOST|DATABASE_URL|REDIS_URL|DATA_DIR|WORKERS|ROOT_TOKEN|UPSTREAM_URL|SECRET_ENCRYPTION_KEY|DEFAULT_RATE_LIMIT|LOG_LEVEL|NODE_OPTIONS)$/.test(k)) continue;
    out[k] = v;
  }
  return out;
}

async function stopProc(proc: Proc, graceMs = 8000): Promise<void> {
  const pid = proc.child.pid;
  if (proc.exited || pid === undefined) return;
  const exited = new Promise<void>((resolve) => proc.child.once('exit', () => resolve()));
  killGroup(pid, 'SIGTERM');
  const done = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
  // The leader may exit before its workers: the group gets SIGKILL either way.
  killGroup(pid, 'SIGKILL');
  if (!done) log(`${proc.name} ignored SIGTERM for ${graceMs} ms; killed`);
  recordPids();
}

/** Started before any target: stopped after them, so a Tollgate's last usage flush still finds Redis. */
const INFRASTRUCTURE = new Set(['backend', 'redis']);

async function stopAll(): Promise<void> {
  await Promise.all(procs.filter((p) => !INFRASTRUCTURE.has(p.name)).map((p) => stopProc(p)));
  await Promise.all(procs.map((p) => stopProc(p)));
}

process.on('exit', () => {
  for (const p of procs) if (!p.exited && p.child.pid !== undefined) killGroup(p.child.pid, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    log(`${signal}: stopping everything`);
    void stopAll().finally(() => process.exit(130));
  });
}

/** Distinct warning and error messages a Tollgate process logged (pino JSON lines, level ≥ 40). */
function loggedProblems(proc: Proc | undefined): string[] {
  if (!proc) return [];
  const seen = new Map<string, number>();
  for (const line of readFileOr(proc.logFile, '').split('\n')) {
    const m = /"level":(\d+).*?"msg":"([^"]*)"/.exec(line);
    if (m && Number(m[1]) >= 40) seen.set(m[2] as string, (seen.get(m[2] as string) ?? 0) + 1);
  }
  return [...seen].map(([msg, count]) => `${count} × "${msg}"`);
}

function problemsNote(procs: (Proc | undefined)[]): string {
  const problems = procs.flatMap(loggedProblems);
  return problems.length === 0 ? '' : `\n\nLogged by Tollgate during the run: ${problems.join('; ')}.`;
}

function tail(file: string, lines = 15): string {
  return readFileOr(file, '').split('\n').slice(-lines).join('\n');
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

async function waitFor(proc: Proc, what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`${proc.name} exited while starting:\n${tail(proc.logFile)}`);
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${proc.name}: ${what} not ready after ${timeoutMs} ms:\n${tail(proc.logFile)}`);
}

function httpOk(url: string, headers: Record<string, string> = {}): () => Promise<boolean> {
  return async () => (await fetch(url, { headers, signal: AbortSignal.timeout(2000) })).ok;
}

/** A process and all its descendants (nginx workers, cluster workers), from /proc. */
function processTree(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readFileOr(`/proc/${entry}/stat`, '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(entry));
    children.set(ppid, list);
  }
  const tree: number[] = [];
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    tree.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return tree;
}

function treeRssKiB(rootPid: number): number {
  let total = 0;
  for (const pid of processTree(rootPid)) {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileOr(`/proc/${pid}/status`, ''));
    total += match ? Number(match[1]) : 0;
  }
  return total;
}

/** Every thread of a process and its descendants onto `cpus` (a taskset list). */
function pinTree(rootPid: number | undefined, cpus: string): void {
  if (rootPid === undefined) return;
  for (const pid of processTree(rootPid)) execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

// ---------------------------------------------------------------------------------------------
// Tools and services

function have(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

function ensureTools(): void {
  const missing = ['nginx', 'haproxy', 'wrk'].filter((t) => !have(t));
  if (missing.length === 0) return;
  log(`installing ${missing.join(', ')} from Debian`);
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env: aptEnv });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env: aptEnv });
}

function renderConfig(template: string, out: string, vars: Record<string, string | number>): string {
  let text = fs.readFileSync(path.join(ROOT, 'bench/peers', template), 'utf8');
  for (const [k, v] of Object.entries(vars)) text = text.replaceAll(`{{${k}}}`, String(v));
  const file = path.join(workDir, out);
  fs.writeFileSync(file, text);
  return file;
}

async function startBackend(): Promise<Proc> {
  const conf = renderConfig('nginx-backend.conf', 'backend.conf', { DIR: workDir, PORT: PORT.backend });
  const proc = startProc('backend', 'nginx', ['-c', conf, '-p', workDir, '-e', path.join(workDir, 'backend-error.log'), '-g', 'daemon off;']);
  await waitFor(proc, 'backend', httpOk(`${BACKEND_URL}/`));
  return proc;
}

async function freshDatabase(): Promise<string> {
  const admin = new pg.Client({ connectionString: `${PG_URL}/postgres` });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${DB_NAME}`);
  } finally {
    await admin.end();
  }
  return `${PG_URL}/${DB_NAME}`;
}

async function flushRedis(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  await redis.flushdb();
  redis.disconnect();
}

function buildTollgate(): boolean {
  if (env.BENCH_SKIP_BUILD !== '1') {
    if (!fs.existsSync(path.join(ROOT, 'src/main.ts'))) {
      log('src/main.ts does not exist yet: Tollgate targets skipped');
      return false;
    }
    log('npm run build');
    const result = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (result.status !== 0) {
      log('npm run build failed: Tollgate targets skipped');
      return false;
    }
  }
  return fs.existsSync(TOLLGATE_MAIN);
}

interface TollgateOptions {
  readonly name: string;
  readonly port: number;
  readonly mode: 'embedded' | 'redis';
  readonly databaseUrl?: string;
  readonly redisUrl?: string;
  readonly workers?: number;
  readonly nodeArgs?: string[];
  readonly extraEnv?: Record<string, string>;
}

const encryptionKey = randomBytes(32).toString('base64');

async function startTollgate(o: TollgateOptions): Promise<Proc> {
  const opsPort = o.port + PORT.opsOffset;
  const vars: Record<string, string> = {
    PORT: String(o.port),
    OPS_PORT: String(opsPort),
    HOST: '127.0.0.1',
    UPSTREAM_URL: BACKEND_URL,
    ROOT_TOKEN,
    LOG_LEVEL: 'warn',
    WORKERS: String(o.workers ?? 1),
    NODE_ENV: 'production',
    ...o.extraEnv,
  };
  if (o.mode === 'embedded') {
    vars.DATA_DIR = path.join(workDir, `${o.name}-data`);
  } else {
    vars.DATABASE_URL = o.databaseUrl ?? '';
    vars.REDIS_URL = o.redisUrl ?? redisUrl;
    vars.SECRET_ENCRYPTION_KEY = encryptionKey;
    vars.DATA_DIR = path.join(workDir, `${o.name}-data`);
  }
  const proc = startProc(o.name, NODE, [...(o.nodeArgs ?? []), TOLLGATE_MAIN], vars);
  await waitFor(proc, '/readyz', httpOk(`http://127.0.0.1:${opsPort}/readyz`));
  return proc;
}

async function management(port: number, route: string, body: unknown, accept: number[] = [200, 201]): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ROOT_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!accept.includes(res.status)) throw new Error(`POST ${route} → ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function ensurePlan(port: number): Promise<void> {
  await management(port, '/rate-limit/create', { rateLimitId: PLAN_ID, description: 'bench: never triggers', limit: HUGE_LIMIT, period: 'hour' }, [201, 409]);
}

// A key bound to the huge plan: the limiter runs on every request but never refuses.
async function createKey(port: number, name: string, applyPlan = true): Promise<string> {
  const key = await management(port, '/consumer-api-key/create', { name });
  if (applyPlan) await management(port, '/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: PLAN_ID });
  return String(key.secret);
}

// ---------------------------------------------------------------------------------------------
// wrk

interface WrkResult {
  readonly rps: number;
  readonly requests: number;
  readonly p50: number; // ms
  readonly p99: number; // ms
  readonly non2xx: number;
  readonly socketErrors: number;
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  const scale: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return n * (scale[unit] ?? NaN);
}

function parseWrk(out: string): WrkResult {
  const num = (re: RegExp): number => Number(re.exec(out)?.[1] ?? NaN);
  const pct = (p: string): number => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm').exec(out);
    return m ? toMs(m[1] as string, m[2] as string) : NaN;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in /),
    p50: pct('50'),
    p99: pct('99'),
    non2xx: /Non-2xx or 3xx responses: (\d+)/.test(out) ? num(/Non-2xx or 3xx responses: (\d+)/) : 0,
    socketErrors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

interface WrkOptions {
  readonly url: string;
  readonly seconds: number;
  readonly headers?: Record<string, string>;
  readonly threads?: number;
  readonly connections?: number;
  readonly script?: string;
  readonly scriptEnv?: Record<string, string>;
  /** Runs wrk on these CPUs only (taskset list, e.g. "0"). */
  readonly cpus?: string;
}

async function wrk(o: WrkOptions): Promise<WrkResult> {
  const args = ['-t', String(o.threads ?? THREADS), '-c', String(o.connections ?? CONNECTIONS), '-d', `${o.seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (o.script) args.push('-s', o.script);
  args.push(o.url);
  const [cmd, argv] = o.cpus === undefined ? niced('wrk', args) : niced('taskset', ['-c', o.cpus, 'wrk', ...args]);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, ...o.scriptEnv }, detached: NICE !== undefined });
  niceSession(child.pid);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  // 'close', not 'exit': only then has all of wrk's output been read.
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const result = parseWrk(out);
  if (code !== 0 || !Number.isFinite(result.rps)) throw new Error(`wrk failed (${code}):\n${out}`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Machine description and output

function machine(): string {
  const cpu = /model name\s*:\s*(.+)/.exec(readFileOr('/proc/cpuinfo', ''))?.[1] ?? 'unknown';
  const sh = (cmd: string): string => spawnSync('sh', ['-c', cmd], { encoding: 'utf8' }).stdout.trim() + spawnSync('sh', ['-c', cmd], { encoding: 'utf8' }).stderr.trim();
  const nodeVersion = spawnSync(NODE, ['-v'], { encoding: 'utf8' }).stdout.trim();
  const lines = [
    `- CPU: ${cpu}; \`nproc\`: ${sh('nproc')}; load average at start: ${loadAtStart}, at the end: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}${NICE === undefined ? '' : `; targets and wrk at nice ${NICE} (BENCH_NICE)`}`,
    `- Memory (\`free -h\`): ${sh('free -h | awk \'/Mem:/ {print $2 " total, " $7 " available"}\'')}`,
    `- Node ${nodeVersion} (node_modules/.bin/node) for every Node program; ${sh('nginx -v 2>&1')}; ${sh('haproxy -v | head -1 | cut -d" " -f1-3')}; ${sh('wrk -v 2>&1 | head -1 | cut -d" " -f1-2')}`,
    `- Redis ${sh('redis-cli -v | cut -d" " -f2')} (${redisUrl === REDIS_URL ? `the shared server, ${REDIS_URL}` : 'a private redis-server started by the bench, at its priority'}) and PostgreSQL ${sh(`psql "${PG_URL}/postgres" -Atc "show server_version" 2>/dev/null`)} on 127.0.0.1`,
  ];
  return lines.join('\n');
}

function writeDocsSection(marker: string, body: string): void {
  fs.mkdirSync(RESULTS, { recursive: true });
  fs.writeFileSync(path.join(RESULTS, `${marker}.md`), `${body}\n`);
  if (env.BENCH_NO_DOCS === '1') return;
  const start = `<!-- bench:${marker}:start -->`;
  const end = `<!-- bench:${marker}:end -->`;
  let doc = readFileOr(DOCS, '# Performance\n');
  const section = `${start}\n${body}\n${end}`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  doc = i >= 0 && j > i ? doc.slice(0, i) + section + doc.slice(j + end.length) : `${doc.trimEnd()}\n\n${section}\n`;
  fs.writeFileSync(DOCS, doc);
  log(`docs/performance.md: section ${marker} rewritten`);
}

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—');
const ratio = (a: number, b: number | undefined): string => (b && Number.isFinite(a) && Number.isFinite(b) ? `${(a / b).toFixed(2)}×` : '—');
const median = (xs: number[]): number => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

function ensureWorkDir(): void {
  reapPreviousRun();
  workDir = fs.mkdtempSync(path.join(STATE_DIR, 'run-'));
  log(`work directory ${workDir} (configs and logs)`);
}

// ---------------------------------------------------------------------------------------------
// The comparison table

interface Target {
  readonly id: string;
  readonly label: string;
  readonly port: number;
  secret: string;
  proc?: Proc;
  readonly rounds: WrkResult[];
  rssKiB?: number;
  note?: string;
}

async function startPeers(targets: Target[], wanted: (id: string) => boolean): Promise<void> {
  const redisEnv = { REDIS_URL: redisUrl, BACKEND_URL, SECRET: PEER_SECRET, PREFIX: 'bench:' };
  const peer = (id: string, label: string, port: number): Target => ({ id, label, port, secret: PEER_SECRET, rounds: [] });
  if (wanted('nginx')) {
    const t = peer('nginx', 'nginx (map + limit_req)', PORT.nginx);
    const conf = renderConfig('nginx-peer.conf', 'nginx-peer.conf', { DIR: workDir, PORT: t.port, BACKEND_PORT: PORT.backend, SECRET: PEER_SECRET });
    t.proc = startProc('nginx', 'nginx', ['-c', conf, '-p', workDir, '-e', path.join(workDir, 'nginx-peer-error.log'), '-g', 'daemon off;']);
    targets.push(t);
  }
  if (wanted('haproxy')) {
    const t = peer('haproxy', 'HAProxy (map ACL + stick table)', PORT.haproxy);
    fs.writeFileSync(path.join(workDir, 'haproxy-keys.map'), `${PEER_SECRET} ${PEER_SECRET}\n`);
    const conf = renderConfig('haproxy-peer.cfg', 'haproxy-peer.cfg', { DIR: workDir, PORT: t.port, BACKEND_PORT: PORT.backend });
    t.proc = startProc('haproxy', 'haproxy', ['-db', '-f', conf]);
    targets.push(t);
  }
  if (wanted('express')) {
    const t = peer('express', 'Express 5 + express-rate-limit (Redis) + http-proxy-middleware 4', PORT.express);
    t.proc = startProc('express', NODE, ['bench/peers/express.ts'], { ...redisEnv, PORT: String(t.port) });
    targets.push(t);
  }
  if (wanted('fastify')) {
    const t = peer('fastify', 'Fastify 5 + @fastify/rate-limit (Redis) + @fastify/http-proxy', PORT.fastify);
    t.proc = startProc('fastify', NODE, ['bench/peers/fastify.ts'], { ...redisEnv, PORT: String(t.port) });
    targets.push(t);
  }
  for (const t of targets) {
    if (t.proc) await waitFor(t.proc, 'first proxied request', httpOk(`http://127.0.0.1:${t.port}/`, { authorization: `Bearer ${t.secret}` }));
  }
}

async function startTollgates(targets: Target[], wanted: (id: string) => boolean): Promise<void> {
  const ids = ['tollgate-embedded', 'tollgate-redis', 'tollgate-redis-w2'].filter(wanted);
  if (ids.length === 0 || !buildTollgate()) return;
  if (wanted('tollgate-embedded')) {
    const t: Target = { id: 'tollgate-embedded', label: 'Tollgate embedded (PGlite, in-process counters)', port: PORT.tollgateEmbedded, secret: '', rounds: [] };
    t.proc = await startTollgate({ name: t.id, port: t.port, mode: 'embedded' });
    await ensurePlan(t.port);
    t.secret = await createKey(t.port, 'bench');
    targets.push(t);
  }
  if (wanted('tollgate-redis') || wanted('tollgate-redis-w2')) {
    const databaseUrl = await freshDatabase();
    // Started one after the other: both run migrations against the same fresh database.
    for (const [id, port, workers] of [
      ['tollgate-redis', PORT.tollgateRedis, 1],
      ['tollgate-redis-w2', PORT.tollgateRedisW2, 2],
    ] as const) {
      if (!wanted(id)) continue;
      const label = workers === 1 ? 'Tollgate Redis mode + Postgres, 1 process' : `Tollgate Redis mode + Postgres, WORKERS=${workers}`;
      const t: Target = { id, label, port, secret: '', rounds: [] };
      t.proc = await startTollgate({ name: id, port, mode: 'redis', databaseUrl, workers });
      await ensurePlan(port);
      t.secret = await createKey(port, id);
      targets.push(t);
    }
  }
}

// One request through each target, checked at the backend's echo: the key arrived as x-api-key and
// the client's Authorization did not. A target that skips part of the job is flagged in the table.
async function checkJob(t: Target): Promise<void> {
  if (t.id === 'backend') return;
  const res = await fetch(`http://127.0.0.1:${t.port}/check?x=1`, { headers: { authorization: `Bearer ${t.secret}` } });
  await res.arrayBuffer();
  const problems: string[] = [];
  if (res.status !== 200) problems.push(`status ${res.status}`);
  if (res.headers.get('x-seen-api-key') !== t.secret) problems.push('x-api-key not forwarded');
  if (res.headers.get('x-seen-authorization')) problems.push('Authorization forwarded');
  const denied = await fetch(`http://127.0.0.1:${t.port}/check`, { headers: { authorization: 'Bearer wrong-key' } });
  await denied.arrayBuffer();
  if (denied.status !== 401) problems.push(`wrong key → ${denied.status}`);
  if (problems.length > 0) {
    t.note = problems.join(', ');
    log(`${t.id}: ${t.note}`);
  }
}

function renderTable(targets: Target[]): string {
  const backend = targets.find((t) => t.id === 'backend');
  const tollgate = targets.find((t) => t.id === 'tollgate-redis');
  const agg = (t: Target | undefined) => (t ? { rps: median(t.rounds.map((r) => r.rps)), p50: median(t.rounds.map((r) => r.p50)), p99: median(t.rounds.map((r) => r.p99)) } : undefined);
  const b = agg(backend);
  const g = agg(tollgate);
  const rows = [
    '| target | req/s | ÷ backend | ÷ Tollgate | p50 ms | ÷ backend | ÷ Tollgate | p99 ms | ÷ backend | ÷ Tollgate | non-2xx | req/s per round | RSS after |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|',
  ];
  for (const t of targets) {
    const a = agg(t) as { rps: number; p50: number; p99: number };
    const non2xx = t.rounds.reduce((s, r) => s + r.non2xx + r.socketErrors, 0);
    const label = t.note ? `${t.label} ⚠ ${t.note}` : t.label;
    rows.push(
      `| ${label} | ${fmt(a.rps)} | ${ratio(a.rps, b?.rps)} | ${ratio(a.rps, g?.rps)} | ${fmt(a.p50, 2)} | ${ratio(a.p50, b?.p50)} | ${ratio(a.p50, g?.p50)} | ${fmt(a.p99, 2)} | ${ratio(a.p99, b?.p99)} | ${ratio(a.p99, g?.p99)} | ${fmt(non2xx)} | ${t.rounds.map((r) => fmt(r.rps)).join(' / ')} | ${t.rssKiB ? `${fmt(t.rssKiB / 1024)} MiB` : '—'} |`,
    );
  }
  return rows.join('\n');
}

async function table(): Promise<void> {
  const only = env.BENCH_TARGETS?.split(',').map((s) => s.trim()).filter(Boolean);
  const wanted = (id: string): boolean => !only || only.includes(id);
  ensureTools();
  for (const port of Object.values(PORT)) {
    if (port > 1000 && !(await portFree(port))) throw new Error(`port ${port} is in use: another bench still running?`);
  }
  await runRedis();
  const targets: Target[] = [];
  const backendProc = await startBackend();
  if (wanted('backend')) targets.push({ id: 'backend', label: 'backend direct (nginx, static JSON)', port: PORT.backend, secret: PEER_SECRET, proc: backendProc, rounds: [] });
  await startPeers(targets, wanted);
  await startTollgates(targets, wanted);
  for (const t of targets) await checkJob(t);
  if (PIN) {
    // WORKERS=2 is two processes: it keeps every CPU, and its row says so.
    pinTree(backendProc.child.pid, CLIENT_CPUS);
    for (const t of targets) {
      if (t.id === 'backend') continue;
      if (t.id === 'tollgate-redis-w2') t.note = [t.note, 'not pinned: two workers'].filter(Boolean).join(', ');
      else pinTree(t.proc?.child.pid, TARGET_CPUS);
    }
  }

  const load = (t: Target, seconds: number) =>
    wrk({ url: `http://127.0.0.1:${t.port}/bench/item?id=42`, seconds, headers: { authorization: `Bearer ${t.secret}` }, cpus: PIN ? CLIENT_CPUS : undefined });
  log(`warm-up ${WARMUP} s each (JIT, connection pools), then ${ROUNDS} rounds × ${DURATION} s, wrk -t${THREADS} -c${CONNECTIONS}`);
  for (const t of targets) await load(t, WARMUP);
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts one target later, so no target always runs right after the same neighbour.
    for (let i = 0; i < targets.length; i++) {
      const t = targets[(i + round) % targets.length] as Target;
      const r = await load(t, DURATION);
      t.rounds.push(r);
      log(`round ${round + 1}/${ROUNDS} ${t.id}: ${fmt(r.rps)} req/s, p50 ${fmt(r.p50, 2)} ms, p99 ${fmt(r.p99, 2)} ms, non-2xx ${r.non2xx + r.socketErrors}`);
    }
  }
  for (const t of targets) {
    if (t.proc?.child.pid) t.rssKiB = treeRssKiB(t.proc.child.pid);
    if (t.id.startsWith('tollgate')) {
      const problems = loggedProblems(t.proc);
      if (problems.length > 0) t.note = [t.note, `logged ${problems.join('; ')}`].filter(Boolean).join(', ');
    }
  }

  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const body = [
    `Latest run: ${when} UTC, \`${PIN ? 'BENCH_PIN=1 ' : ''}npm run bench\` (wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s after a ${WARMUP} s warm-up each; medians of the rounds; ratios are this row ÷ the backend row and ÷ the Tollgate Redis-mode one-process row; non-2xx includes socket errors${PIN ? `; every target pinned to CPU ${TARGET_CPUS}, wrk and the backend to CPU ${CLIENT_CPUS}` : ''}).`,
    '',
    machine(),
    '',
    renderTable(targets),
  ].join('\n');
  process.stdout.write(`\n${body}\n`);
  writeDocsSection(PIN ? 'table-pinned' : 'table', body);
}

// ---------------------------------------------------------------------------------------------
// Scale figures: memory for many cached keys, many keys in rotation, replicas against one Redis

// Concurrent workers over a list of jobs; returns when all are done.
async function pooled<T>(items: T[], concurrency: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const step = Math.max(1, Math.floor(items.length / 10));
  const runners = Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++;
      if (i > 0 && i % step === 0) log(`  ${i} / ${items.length}`);
      await work(items[i] as T, i);
    }
  });
  await Promise.all(runners);
}

async function scale(): Promise<void> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const keyCount = positive(env.BENCH_SCALE_KEYS, 100_000);
  const rotation = Math.min(positive(env.BENCH_ROTATION_KEYS, 10_000), keyCount);
  const replicaCounts = (env.BENCH_REPLICAS ?? '1,2,4').split(',').map(Number).filter((n) => n > 0);
  await runRedis();
  await startBackend();
  const databaseUrl = await freshDatabase();
  // The default plan puts every key under the limiter without a bind call per key.
  const extraEnv = { DEFAULT_RATE_LIMIT: `${HUGE_LIMIT}/hour` };
  const port = PORT.tollgateRedis;
  const tg = await startTollgate({ name: 'scale', port, mode: 'redis', databaseUrl, extraEnv });
  const pid = tg.child.pid as number;
  await sleep(1000);
  const rssStart = treeRssKiB(pid);

  log(`creating ${keyCount} keys through the management API`);
  const secrets: string[] = new Array<string>(keyCount);
  let started = Date.now();
  await pooled(secrets, 16, async (_s, i) => {
    secrets[i] = await createKey(port, `scale-${i}`, false);
  });
  const createRate = keyCount / ((Date.now() - started) / 1000);
  const rssCreated = treeRssKiB(pid);

  log(`one proxied request per key (warms the key cache)`);
  started = Date.now();
  let failures = 0;
  await pooled(secrets, 50, async (secret) => {
    const res = await fetch(`http://127.0.0.1:${port}/warm`, { headers: { authorization: `Bearer ${secret}` } });
    await res.arrayBuffer();
    if (res.status !== 200) failures++;
  });
  const warmRate = keyCount / ((Date.now() - started) / 1000);
  await sleep(2000);
  const rssWarm = treeRssKiB(pid);

  const keysFile = path.join(workDir, 'rotation-keys.txt');
  fs.writeFileSync(keysFile, secrets.slice(0, rotation).join('\n') + '\n');
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  await wrk({ url, seconds: WARMUP, headers: { authorization: `Bearer ${secrets[0]}` } });
  const oneKey = await wrk({ url, seconds: DURATION, headers: { authorization: `Bearer ${secrets[0]}` } });
  const rotate = () => wrk({ url, seconds: DURATION, script: path.join(ROOT, 'bench/rotate-keys.lua'), scriptEnv: { KEYS_FILE: keysFile } });
  // First as the keys stand after the warm-up above, whose cache entries may have outlived the key
  // cache's TTL; then again right away, with every rotating key freshly cached by the first pass.
  const rotatingAfterTtl = await rotate();
  const rotating = await rotate();
  const rssAfterLoad = treeRssKiB(pid);
  await stopProc(tg);

  // Each placement twice: Tollgate replicas, then the bare forwarder of `engines` (no key, no limiter,
  // no Redis) as the control, which shows what the machine itself loses as processes are added. As
  // placed by the scheduler also Tollgate serving a key without a plan, which separates what the
  // limiter costs from the rest of Tollgate.
  // Placements: as the scheduler places everything; and with one fixed CPU budget for all the
  // replicas (the last CPU, wrk on the others), so that adding replicas divides the same CPU instead
  // of adding processes that fight wrk for it.
  const control = 'control: bare forwarder (bench/peers/engine.ts) processes';
  const series: { label: string; control?: boolean; noPlan?: boolean; replicaCpus?: string; clientCpus?: string }[] = [
    { label: 'placed by the scheduler' },
    { label: 'key without a plan (no limiter), placed by the scheduler', noPlan: true },
    { label: `${control} placed by the scheduler`, control: true },
  ];
  if (CPU_COUNT >= 2 && have('taskset')) {
    const pinned = { replicaCpus: TARGET_CPUS, clientCpus: CLIENT_CPUS };
    const where = `on CPU ${TARGET_CPUS}, wrk on CPU ${CLIENT_CPUS}`;
    series.push({ label: `all replicas ${where}`, ...pinned });
    series.push({ label: `${control} ${where}`, control: true, ...pinned });
  }
  const replicaRows: string[] = [];
  const allReplicas: Proc[] = [];
  for (const { label, control, noPlan, replicaCpus, clientCpus } of series) {
    log(`replicas ${replicaCounts.join(' → ')} against one Redis, ${label}`);
    for (const n of replicaCounts) {
      const replicas: Proc[] = [];
      try {
        for (let i = 0; i < n; i++) {
          const port = PORT.replicaBase + i;
          const name = `${control ? 'engine' : noPlan ? 'replica-no-plan' : 'replica'}-${n}-${i}${replicaCpus === undefined ? '' : '-pinned'}`;
          let replica: Proc;
          if (control) {
            replica = startProc(name, NODE, ['bench/peers/engine.ts'], { PORT: String(port), BACKEND_URL, ENGINE: 'dispatch' });
            await waitFor(replica, 'first forwarded request', httpOk(`http://127.0.0.1:${port}/`));
          } else {
            // Without DEFAULT_RATE_LIMIT the keys have no plan: none was bound to them.
            replica = await startTollgate({ name, port, mode: 'redis', databaseUrl, extraEnv: noPlan ? {} : extraEnv });
          }
          if (replicaCpus !== undefined) pinTree(replica.child.pid, replicaCpus);
          replicas.push(replica);
        }
        const headers = { authorization: `Bearer ${secrets[0]}` };
        const urls = replicas.map((_p, i) => `http://127.0.0.1:${PORT.replicaBase + i}/bench/item?id=42`);
        // One wrk per replica, the connections split between them, so the client side stays the same size.
        const load = (seconds: number) =>
          Promise.all(urls.map((u) => wrk({ url: u, seconds, headers, threads: n === 1 ? THREADS : 1, connections: Math.ceil(CONNECTIONS / n), cpus: clientCpus })));
        // Every replica gets the same warm-up CPU whatever n (they share the CPUs for it): a fresh
        // process is measured after its JIT has settled, as a replica that has run for a while would be.
        await load(REPLICA_WARMUP * n);
        const results = await load(DURATION);
        const sum = results.reduce((s, r) => s + r.rps, 0);
        const worstP99 = Math.max(...results.map((r) => r.p99));
        const non2xx = results.reduce((s, r) => s + r.non2xx + r.socketErrors, 0);
        replicaRows.push(`| ${label} | ${n} | ${fmt(sum)} | ${results.map((r) => fmt(r.rps)).join(' + ')} | ${fmt(worstP99, 2)} | ${fmt(non2xx)} |`);
        log(`${n} replica(s), ${label}: ${fmt(sum)} req/s`);
      } catch (err) {
        // One failed step leaves a row saying so; the figures already taken are still written.
        replicaRows.push(`| ${label} | ${n} | failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]} | | | |`);
      } finally {
        await Promise.all(replicas.map((p) => stopProc(p)));
        allReplicas.push(...replicas);
      }
    }
  }

  const mib = (kib: number) => `${fmt(kib / 1024)} MiB`;
  const body = [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- scale\` (Tollgate Redis mode + Postgres, one process, \`DEFAULT_RATE_LIMIT\` ${HUGE_LIMIT}/hour so every key passes the limiter; wrk -c${CONNECTIONS}, ${DURATION} s per figure).`,
    '',
    `| figure | value |`,
    `|---|--:|`,
    `| resident memory, started, no keys | ${mib(rssStart)} |`,
    `| after creating ${fmt(keyCount)} keys (${fmt(createRate)} keys/s through the API) | ${mib(rssCreated)} |`,
    `| after one proxied request per key (${fmt(warmRate)} req/s, ${failures} not 200): ${fmt(keyCount)} cached keys | ${mib(rssWarm)} |`,
    `| per cached key ((warm − created) ÷ keys) | ${fmt(((rssWarm - rssCreated) * 1024) / keyCount)} bytes |`,
    `| after the load below | ${mib(rssAfterLoad)} |`,
    `| req/s, one key | ${fmt(oneKey.rps)} (p99 ${fmt(oneKey.p99, 2)} ms) |`,
    `| req/s, ${fmt(rotation)} distinct keys in rotation (bench/rotate-keys.lua), first pass: their entries cached minutes ago | ${fmt(rotatingAfterTtl.rps)} (p99 ${fmt(rotatingAfterTtl.p99, 2)} ms, non-2xx ${fmt(rotatingAfterTtl.non2xx + rotatingAfterTtl.socketErrors)}) |`,
    `| req/s, ${fmt(rotation)} distinct keys in rotation, second pass right after | ${fmt(rotating.rps)} (p99 ${fmt(rotating.p99, 2)} ms, non-2xx ${fmt(rotating.non2xx + rotating.socketErrors)}) |`,
    '',
    `Replicas against one Redis (fresh processes for every row; one wrk per replica, connections split, req/s summed; a warm-up of ${REPLICA_WARMUP} s × the number of replicas first):`,
    '',
    '| CPUs | replicas | req/s total | per replica | worst p99 ms | non-2xx |',
    '|---|--:|--:|---|--:|--:|',
    ...replicaRows,
  ].join('\n') + problemsNote([tg, ...allReplicas]);
  process.stdout.write(`\n${body}\n`);
  writeDocsSection('scale', body);
}

// ---------------------------------------------------------------------------------------------
// Cost per request: Redis commands (INFO commandstats) and Postgres writes (pg_stat_database)

async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1] as string, Number(m[2]));
  return out;
}

function statsDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

interface PgStats {
  commits: number;
  writes: number;
  reads: number;
}

async function pgStats(): Promise<PgStats> {
  const client = new pg.Client({ connectionString: `${PG_URL}/postgres` });
  await client.connect();
  try {
    const { rows } = await client.query<{ xact_commit: string; writes: string; reads: string }>(
      'SELECT xact_commit, tup_inserted + tup_updated + tup_deleted AS writes, tup_fetched AS reads FROM pg_stat_database WHERE datname = $1',
      [DB_NAME],
    );
    const row = rows[0];
    return { commits: Number(row?.xact_commit ?? 0), writes: Number(row?.writes ?? 0), reads: Number(row?.reads ?? 0) };
  } finally {
    await client.end();
  }
}

// A private redis-server when one is installed (on `cpus` when given, a taskset list): INFO
// commandstats is server-wide, and the shared Redis on 6379 carries the other test suites' commands.
async function privateRedis(cpus?: string): Promise<string> {
  if (!have('redis-server')) return REDIS_URL;
  const port = 16379;
  const proc = startProc('redis', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', workDir]);
  const url = `redis://127.0.0.1:${port}`;
  await waitFor(proc, 'PING', async () => {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {}); // refused until the server listens: expected while waiting
    try {
      await r.connect();
      return (await r.ping()) === 'PONG';
    } finally {
      r.disconnect();
    }
  });
  if (cpus !== undefined) pinTree(proc.child.pid, cpus);
  return url;
}

// The shared Redis cannot be given the run's priority: under BENCH_NICE the Redis-backed targets get
// a private redis-server at the same priority, or they would wait on a server that other work starves.
async function runRedis(): Promise<void> {
  if (NICE !== undefined) redisUrl = await privateRedis();
  await flushRedis(redisUrl);
}

async function cost(): Promise<void> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  redisUrl = await privateRedis();
  await flushRedis(redisUrl);
  await startBackend();
  const databaseUrl = await freshDatabase();
  const port = PORT.tollgateRedis;
  const options: TollgateOptions = { name: 'cost', port, mode: 'redis', databaseUrl, redisUrl };
  const idleSeconds = DURATION + 3;

  // Set-up, then a stop: Postgres backends flush their statistics when they exit, so every
  // snapshot below is taken with the service stopped and nothing pending.
  let tg = await startTollgate(options);
  await ensurePlan(port);
  const secret = await createKey(port, 'cost');
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  const headers = { authorization: `Bearer ${secret}` };
  await wrk({ url, seconds: WARMUP, headers });
  await stopProc(tg);

  const redis = new Redis(redisUrl);
  try {
    // Baseline: the same start, idle time and stop without traffic (usage pushes, flusher, pub/sub).
    // MONITOR tells the client's commands from the ones a Lua script runs (source "lua"), which
    // commandstats counts alike: the client's are the round trips. `lua` is swapped per phase.
    const monitor = await new Redis(redisUrl).monitor();
    let lua = new Map<string, number>();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') return;
      const cmd = String(args[0]).toLowerCase();
      lua.set(cmd, (lua.get(cmd) ?? 0) + 1);
    });
    const pg0 = await pgStats();
    const r0 = await commandStats(redis);
    tg = await startTollgate(options);
    await sleep(idleSeconds * 1000);
    await stopProc(tg);
    const pg1 = await pgStats();
    const r1 = await commandStats(redis);
    const idleLua = lua;
    lua = new Map();
    const fromLua = lua;

    tg = await startTollgate(options);
    const load = await wrk({ url, seconds: DURATION, headers });
    await sleep(3000); // usage reaches Redis every second and Postgres after it
    await stopProc(tg);
    const pg2 = await pgStats();
    const r2 = await commandStats(redis);
    monitor.disconnect();
    const loadSeconds = DURATION + 3;

    const idle = statsDelta(r0, r1);
    const loaded = statsDelta(r1, r2);
    idle.delete('monitor');
    const n = load.requests;
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    const commands = [...new Set([...idle.keys(), ...loaded.keys()])].sort((a, b) => (loaded.get(b) ?? 0) - (loaded.get(a) ?? 0));
    const net = (c: string) => (loaded.get(c) ?? 0) - (fromLua.get(c) ?? 0) - ((idle.get(c) ?? 0) - (idleLua.get(c) ?? 0));
    const roundTrips = commands.reduce((s, c) => s + net(c), 0);
    const per10k = (x: number) => fmt((x * 10_000) / n, 1);
    const perSecond = (x: number) => fmt(x / loadSeconds, 1);
    const pgRow = (label: string, a: number, b: number, c: number, bold = false) => {
      const value = per10k(c - b - (b - a));
      return `| ${label} | ${fmt(c - b)} | ${fmt(b - a)} | ${bold ? `**${value}**` : value} | ${perSecond(c - b - (b - a))} |`;
    };
    const body = [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- cost\` (Tollgate Redis mode + Postgres, one process, one key bound to a huge plan; wrk -c${CONNECTIONS} for ${DURATION} s: ${fmt(n)} requests, ${fmt(load.rps)} req/s, non-2xx ${fmt(load.non2xx + load.socketErrors)}; Redis: ${redisUrl === REDIS_URL ? 'the shared server, so other suites may add noise' : 'a private redis-server, nothing else on it'}). Counted from \`INFO commandstats\` and \`pg_stat_database\` deltas over the load and the ${loadSeconds - DURATION} s after it. "Idle" is the same start, ${idleSeconds} s and stop with no traffic; "net" subtracts it. Commands run inside a Lua script (seen through MONITOR) are no round trip of their own.`,
      '',
      '| Redis command | calls under load | of them inside Lua | calls idle | net round trips per proxied request |',
      '|---|--:|--:|--:|--:|',
      ...commands.map((c) => `| ${c} | ${fmt(loaded.get(c) ?? 0)} | ${fmt(fromLua.get(c) ?? 0)} | ${fmt(idle.get(c) ?? 0)} | ${fmt(net(c) / n, 4)} |`),
      `| **all** | ${fmt(sum(loaded))} | ${fmt(sum(fromLua))} | ${fmt(sum(idle))} | **${fmt(roundTrips / n, 4)}** |`,
      '',
      `Redis commands executed per proxied request, Lua included: ${fmt((sum(loaded) - sum(idle)) / n, 2)}.`,
      '',
      '| Postgres (database tollgate_bench) | under load | idle | net per 10,000 requests | net per second of load |',
      '|---|--:|--:|--:|--:|',
      pgRow('transactions committed (xact_commit)', pg0.commits, pg1.commits, pg2.commits),
      pgRow('rows written (tup_inserted + tup_updated + tup_deleted)', pg0.writes, pg1.writes, pg2.writes, true),
      pgRow('rows fetched (tup_fetched)', pg0.reads, pg1.reads, pg2.reads),
      '',
      'Usage is written per key and endpoint once per flush, not per request: the writes follow the seconds of traffic, so per 10,000 requests they fall as the request rate rises.',
    ].join('\n') + problemsNote([tg]);
    process.stdout.write(`\n${body}\n`);
    writeDocsSection('cost', body);
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// CPU profile of one Tollgate process under load

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
const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

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
  if (selfUs.size === 0) throw new Error(`no samples between ${fromUs} and ${toUs} µs (profile starts at ${prof.startTime})`);
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
    const name = `\`${f.functionName || '(anonymous)'}\` ${f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
    fn.set(name, (fn.get(name) ?? 0) + us);
    const o = f.url === '' && f.functionName.startsWith('(') ? f.functionName : origin(f.url);
    orig.set(o, (orig.get(o) ?? 0) + us);
  }
  const pct = (us: number) => `${((us * 100) / busy).toFixed(1)} %`;
  const sorted = (m: Map<string, number>, n: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
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

async function profile(): Promise<void> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await runRedis();
  await startBackend();
  const databaseUrl = await freshDatabase();
  const profDir = path.join(workDir, 'cpuprofile');
  const port = PORT.tollgateRedis;
  const mode = env.BENCH_PROFILE_MODE === 'embedded' ? 'embedded' : 'redis';
  const tg = await startTollgate({ name: 'profile', port, mode, databaseUrl, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] });
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
  if (files.length === 0) throw new Error('no .cpuprofile written: did Tollgate exit through process.exit on SIGTERM?');
  // With several processes (a cluster), the busiest profile is the one that served the load.
  const biggest = files.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0] as string;
  fs.mkdirSync(RESULTS, { recursive: true });
  fs.copyFileSync(biggest, path.join(RESULTS, `tollgate-${mode}.cpuprofile`));
  const body = [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`${mode === 'embedded' ? 'BENCH_PROFILE_MODE=embedded ' : ''}npm run bench -- profile\` (Tollgate ${mode === 'embedded' ? 'embedded' : 'Redis mode + Postgres'}, one process, \`node --cpu-prof\`; wrk -c${CONNECTIONS} for ${DURATION} s after a ${WARMUP} s warm-up: ${fmt(load.rps)} req/s while profiling). Only the samples taken during the measured load are counted; the whole profile is kept as bench/results/tollgate-${mode}.cpuprofile (open it in Chrome DevTools).`,
    '',
    summariseProfile(biggest, fromUs, toUs),
  ].join('\n') + problemsNote([tg]);
  process.stdout.write(`\n${body}\n`);
  writeDocsSection(mode === 'embedded' ? 'profile-embedded' : 'profile', body);
}

// ---------------------------------------------------------------------------------------------
// Forwarding engines alone: what undici's stream() and dispatch() cost per request, no key, no limit

async function engines(): Promise<void> {
  ensureTools();
  await startBackend();
  const variants = [
    { id: 'stream', label: 'undici Pool.stream (the forwarding Tollgate used before dispatch)', port: PORT.replicaBase + 5 },
    { id: 'dispatch', label: 'undici Pool.dispatch, raw-header handler', port: PORT.replicaBase + 6 },
  ];
  const rounds = new Map<string, WrkResult[]>(variants.map((v) => [v.id, []]));
  for (const v of variants) {
    const proc = startProc(`engine-${v.id}`, NODE, ['bench/peers/engine.ts'], { PORT: String(v.port), BACKEND_URL, ENGINE: v.id });
    await waitFor(proc, 'first forwarded request', httpOk(`http://127.0.0.1:${v.port}/`));
  }
  const url = (port: number) => `http://127.0.0.1:${port}/bench/item?id=42`;
  for (const v of variants) await wrk({ url: url(v.port), seconds: WARMUP });
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
      const r = await wrk({ url: url(v.port), seconds: DURATION });
      rounds.get(v.id)?.push(r);
      log(`round ${round + 1}/${ROUNDS} ${v.id}: ${fmt(r.rps)} req/s`);
    }
  }
  const base = median((rounds.get('stream') ?? []).map((r) => r.rps));
  const body = [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- engines\` (bench/peers/engine.ts: node:http server, no key check, no limiter; wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s, medians).`,
    '',
    '| forwarding | req/s | ÷ stream | p50 ms | p99 ms | req/s per round |',
    '|---|--:|--:|--:|--:|---|',
    ...variants.map((v) => {
      const rs = rounds.get(v.id) ?? [];
      const rps = median(rs.map((r) => r.rps));
      return `| ${v.label} | ${fmt(rps)} | ${ratio(rps, base)} | ${fmt(median(rs.map((r) => r.p50)), 2)} | ${fmt(median(rs.map((r) => r.p99)), 2)} | ${rs.map((r) => fmt(r.rps)).join(' / ')} |`;
    }),
  ].join('\n');
  process.stdout.write(`\n${body}\n`);
  writeDocsSection('engines', body);
}

// ---------------------------------------------------------------------------------------------
// CPU per request as the requests in flight per process fall: what a replica that shares its CPU, or
// gets a share of the connections, pays per request

/** CPU time (user + system, every thread) of a process and its descendants, in microseconds. */
function treeCpuUs(rootPid: number): number {
  const tick = 1_000_000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);
  let total = 0;
  for (const pid of processTree(rootPid)) {
    const stat = readFileOr(`/proc/${pid}/stat`, '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += (Number(fields[11]) + Number(fields[12])) * tick; // utime, stime
  }
  return total;
}

async function concurrency(): Promise<void> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  if (CPU_COUNT < 2 || !have('taskset')) throw new Error('needs 2 CPUs and taskset: the target runs on a CPU of its own');
  redisUrl = await privateRedis(CLIENT_CPUS);
  await flushRedis(redisUrl);
  const backend = await startBackend();
  pinTree(backend.child.pid, CLIENT_CPUS);
  const databaseUrl = await freshDatabase();
  const port = PORT.tollgateRedis;
  const tg = await startTollgate({ name: 'concurrency', port, mode: 'redis', databaseUrl, redisUrl });
  await ensurePlan(port);
  const limited = await createKey(port, 'concurrency-limited');
  const unlimited = await createKey(port, 'concurrency-no-plan', false);
  const forwarderPort = PORT.replicaBase + 7;
  const forwarder = startProc('concurrency-forwarder', NODE, ['bench/peers/engine.ts'], { PORT: String(forwarderPort), BACKEND_URL, ENGINE: 'dispatch' });
  await waitFor(forwarder, 'first forwarded request', httpOk(`http://127.0.0.1:${forwarderPort}/`));
  pinTree(tg.child.pid, TARGET_CPUS);
  pinTree(forwarder.child.pid, TARGET_CPUS);
  const redis = new Redis(redisUrl);
  const targets = [
    { label: 'Tollgate, key with a plan (limiter in Redis)', proc: tg, port, secret: limited, limited: true },
    { label: 'Tollgate, key without a plan (no limiter call)', proc: tg, port, secret: unlimited, limited: false },
    { label: 'bare forwarder (bench/peers/engine.ts)', proc: forwarder, port: forwarderPort, secret: PEER_SECRET, limited: false },
  ];
  const levels = (env.BENCH_CONCURRENCY ?? '50,13,4,1').split(',').map(Number).filter((n) => n > 0);
  const rows: string[] = [];
  try {
    for (const t of targets) {
      const pid = t.proc.child.pid as number;
      const load = (connections: number, seconds: number) =>
        wrk({ url: `http://127.0.0.1:${t.port}/bench/item?id=42`, seconds, headers: { authorization: `Bearer ${t.secret}` }, threads: 1, connections, cpus: CLIENT_CPUS });
      await load(CONNECTIONS, WARMUP);
      for (const c of levels) {
        await load(c, 2);
        const evalsha0 = (await commandStats(redis)).get('evalsha') ?? 0;
        const cpu0 = treeCpuUs(pid);
        const r = await load(c, DURATION);
        const cpuUs = treeCpuUs(pid) - cpu0;
        const evalsha = ((await commandStats(redis)).get('evalsha') ?? 0) - evalsha0;
        rows.push(`| ${t.label} | ${c} | ${fmt(r.rps)} | ${fmt(cpuUs / r.requests, 1)} | ${fmt((cpuUs / (DURATION * 1_000_000)) * 100)} % | ${fmt(r.p99, 2)} | ${t.limited ? fmt(evalsha / r.requests, 3) : '–'} |`);
        log(`${t.label}, -c${c}: ${fmt(r.rps)} req/s, ${fmt(cpuUs / r.requests, 1)} µs CPU per request`);
      }
    }
  } finally {
    redis.disconnect();
  }
  const body = [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- concurrency\` (one process on CPU ${TARGET_CPUS}; wrk -t1, the nginx backend and a private redis-server on CPU ${CLIENT_CPUS}; ${DURATION} s per row after a 2 s warm-up at the same concurrency). CPU is the process's user + system time from /proc over the requests wrk completed; \`EVALSHA\` per request from Redis' INFO commandstats.`,
    '',
    '| target | wrk connections | req/s | CPU µs per request | CPU busy | p99 ms | EVALSHA per request |',
    '|---|--:|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n') + problemsNote([tg, forwarder]);
  process.stdout.write(`\n${body}\n`);
  writeDocsSection('concurrency', body);
}

// ---------------------------------------------------------------------------------------------

const commands: Record<string, () => Promise<void>> = { table, scale, cost, profile, engines, concurrency };
const name = process.argv[2] ?? 'table';
const command = commands[name];
if (!command) {
  process.stderr.write(`usage: npm run bench [-- table|scale|cost|profile|engines|concurrency]\n`);
  process.exit(2);
}
ensureWorkDir();
// The runner drives the set-up traffic (key creation, cache warm-up): it gets the run's priority too,
// and gives its session (the caller's shell's) its own back at the end.
const callerNice = /nice (-?\d+)/.exec(readFileOr('/proc/self/autogroup', ''))?.[1];
niceSession(process.pid);
try {
  await command();
} catch (err) {
  log(`failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  await stopAll();
  fs.rmSync(path.join(STATE_DIR, 'pids.json'), { force: true });
  if (NICE !== undefined && callerNice !== undefined) fs.writeFileSync('/proc/self/autogroup', callerNice);
  log(`stopped everything; logs in ${workDir}`);
  // A Redis client left by a failure would keep reconnecting to a server that is gone.
  process.exit();
}
