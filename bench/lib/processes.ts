// Processes: each child leads its own process group, so nginx workers and Tollgate's cluster
// workers stop with it. A run killed with SIGKILL is cleaned up by the next (pids-<runner pid>.json).
import { spawn, execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NICE, ROOT, STATE_DIR, env, log, run } from './config.ts';

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logFile: string;
  exited: boolean;
}

const procs: Proc[] = [];

/** This run's record of the process groups it started: one file per runner, as runs may overlap. */
export const PIDS_FILE = path.join(STATE_DIR, `pids-${process.pid}.json`);

function recordPids(): void {
  const live = procs
    .filter((p) => !p.exited && p.child.pid !== undefined)
    .map((p) => ({ pid: p.child.pid, marker: run.workDir }));
  fs.writeFileSync(PIDS_FILE, JSON.stringify(live));
}

/** Whether `pid` is a bench runner still running: its record belongs to a run in progress, not to us. */
const isRunningBench = (pid: number): boolean =>
  readFileOr(`/proc/${pid}/cmdline`, '').replaceAll('\0', ' ').includes('bench/run.ts');

// A previous run killed with SIGKILL could not clean up; its groups are stopped here, but only those
// of runners that are gone (another developer's run may be going on beside this one), and only
// processes whose command line still names that run's work directory (a pid may have been reused).
function reapPreviousRuns(): void {
  fs.mkdirSync(STATE_DIR, { recursive: true });
  for (const name of fs.readdirSync(STATE_DIR)) {
    const runner = /^pids-(\d+)\.json$/.exec(name)?.[1];
    if (runner === undefined || isRunningBench(Number(runner))) continue;
    const file = path.join(STATE_DIR, name);
    const stale = JSON.parse(readFileOr(file, '[]')) as { pid: number; marker: string }[];
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
}

export function readFileOr(file: string, fallback: string): string {
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

export function startProc(
  name: string,
  command: string,
  args: string[],
  extraEnv: Record<string, string> = {},
): Proc {
  const logFile = path.join(run.workDir, `${name}.log`);
  const fd = fs.openSync(logFile, 'a');
  // BENCH_RUN_DIR marks the process as ours for reapPreviousRuns, whatever its command line.
  const childEnv = { ...baseEnv(), ...extraEnv, BENCH_RUN_DIR: run.workDir };
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

export function niced(command: string, args: string[]): [string, string[]] {
  return NICE === undefined ? [command, args] : ['nice', ['-n', NICE, command, ...args]];
}

// With autogroup scheduling (Debian's default) CPU is shared between sessions first and nice only
// ranks processes inside one; every child here leads its own session, so its session gets the nice.
export function niceSession(pid: number | undefined): void {
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
    if (
      v === undefined ||
      /^(PORT|OPS_PORT|HOST|DATABASE_URL|REDIS_URL|DATA_DIR|WORKERS|ROOT_TOKEN|UPSTREAM_URL|SECRET_ENCRYPTION_KEY|DEFAULT_RATE_LIMIT|LOG_LEVEL|NODE_OPTIONS)$/.test(
        k,
      )
    )
      continue;
    out[k] = v;
  }
  return out;
}

export async function stopProc(proc: Proc, graceMs = 8000): Promise<void> {
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

export async function stopAll(): Promise<void> {
  await Promise.all(procs.filter((p) => !INFRASTRUCTURE.has(p.name)).map((p) => stopProc(p)));
  await Promise.all(procs.map((p) => stopProc(p)));
}

/** Nothing outlives the run: on exit every group is killed, on a signal stopped gracefully first. */
export function stopEverythingOnExit(): void {
  process.on('exit', () => {
    for (const p of procs) if (!p.exited && p.child.pid !== undefined) killGroup(p.child.pid, 'SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      log(`${signal}: stopping everything`);
      void stopAll().finally(() => process.exit(130));
    });
  }
}

export function tail(file: string, lines = 15): string {
  return readFileOr(file, '').split('\n').slice(-lines).join('\n');
}

export async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

export async function waitFor(
  proc: Proc,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`${proc.name} exited while starting:\n${tail(proc.logFile)}`);
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${proc.name}: ${what} not ready after ${timeoutMs} ms:\n${tail(proc.logFile)}`);
}

export function httpOk(url: string, headers: Record<string, string> = {}): () => Promise<boolean> {
  return async () => (await fetch(url, { headers, signal: AbortSignal.timeout(2000) })).ok;
}

/** A process and all its descendants (nginx workers, cluster workers), from /proc. */
export function processTree(rootPid: number): number[] {
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

export function treeRssKiB(rootPid: number): number {
  let total = 0;
  for (const pid of processTree(rootPid)) {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileOr(`/proc/${pid}/status`, ''));
    total += match ? Number(match[1]) : 0;
  }
  return total;
}

/** Every thread of a process and its descendants onto `cpus` (a taskset list). */
export function pinTree(rootPid: number | undefined, cpus: string): void {
  if (rootPid === undefined) return;
  for (const pid of processTree(rootPid))
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

export function ensureWorkDir(): void {
  reapPreviousRuns();
  run.workDir = fs.mkdtempSync(path.join(STATE_DIR, 'run-'));
  log(`work directory ${run.workDir} (configs and logs)`);
}

/** CPU time (user + system, every thread) of a process and its descendants, in microseconds. */
export function treeCpuUs(rootPid: number): number {
  const tick =
    1_000_000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);
  let total = 0;
  for (const pid of processTree(rootPid)) {
    const stat = readFileOr(`/proc/${pid}/stat`, '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += (Number(fields[11]) + Number(fields[12])) * tick; // utime, stime
  }
  return total;
}
