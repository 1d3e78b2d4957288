// wrk: one load, its throughput, latency percentiles and errors parsed from its --latency output.
import { spawn } from 'node:child_process';
import { CONNECTIONS, NICE, THREADS, env } from './config.ts';
import { niced, niceSession } from './processes.ts';

export interface WrkResult {
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

export interface WrkOptions {
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

export async function wrk(o: WrkOptions): Promise<WrkResult> {
  const args = [
    '-t',
    String(o.threads ?? THREADS),
    '-c',
    String(o.connections ?? CONNECTIONS),
    '-d',
    `${o.seconds}s`,
    '--latency',
  ];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (o.script) args.push('-s', o.script);
  args.push(o.url);
  const [cmd, argv] =
    o.cpus === undefined ? niced('wrk', args) : niced('taskset', ['-c', o.cpus, 'wrk', ...args]);
  const child = spawn(cmd, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...env, ...o.scriptEnv },
    detached: NICE !== undefined,
  });
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
