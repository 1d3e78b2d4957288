// What a run reports: the machine it ran on, numbers formatted for tables, what Tollgate logged,
// and the result printed and, when the user names a file, written there.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NICE, NODE, PG_URL, REDIS_URL, env, log, run } from './config.ts';
import { readFileOr, type Proc } from './processes.ts';

const loadAtStart = os
  .loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');

export function machine(): string {
  const cpu = /model name\s*:\s*(.+)/.exec(readFileOr('/proc/cpuinfo', ''))?.[1] ?? 'unknown';
  const sh = (cmd: string): string => {
    const result = spawnSync('sh', ['-c', cmd], { encoding: 'utf8' });
    return result.stdout.trim() + result.stderr.trim();
  };
  const nodeVersion = spawnSync(NODE, ['-v'], { encoding: 'utf8' }).stdout.trim();
  const lines = [
    `- CPU: ${cpu}; \`nproc --all\`: ${sh('nproc --all')}; load average at start: ${loadAtStart}, at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}${NICE === undefined ? '' : `; targets and wrk at nice ${NICE} (BENCH_NICE)`}`,
    `- Memory (\`free -h\`): ${sh('free -h | awk \'/Mem:/ {print $2 " total, " $7 " available"}\'')}`,
    `- Node ${nodeVersion} (node_modules/.bin/node) for every Node program; ${sh('nginx -v 2>&1')}; ${sh('haproxy -v | head -1 | cut -d" " -f1-3')}; ${sh('wrk -v 2>&1 | head -1 | cut -d" " -f1-2')}`,
    `- Redis ${sh('redis-cli -v | cut -d" " -f2')} (${run.redisUrl === REDIS_URL ? `the shared server, ${REDIS_URL}` : 'a private redis-server started by the bench, at its priority'}) and PostgreSQL ${sh(`psql "${PG_URL}/postgres" -Atc "show server_version" 2>/dev/null`)} on 127.0.0.1`,
  ];
  return lines.join('\n');
}

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '—';
export const ratio = (a: number, b: number | undefined): string =>
  b && Number.isFinite(a) && Number.isFinite(b) ? `${(a / b).toFixed(2)}×` : '—';
export const median = (xs: number[]): number => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/** Distinct warning and error messages a Tollgate process logged (pino JSON lines, level ≥ 40). */
export function loggedProblems(proc: Proc | undefined): string[] {
  if (!proc) return [];
  const seen = new Map<string, number>();
  for (const line of readFileOr(proc.logFile, '').split('\n')) {
    const m = /"level":(\d+).*?"msg":"([^"]*)"/.exec(line);
    if (m && Number(m[1]) >= 40) seen.set(m[2] as string, (seen.get(m[2] as string) ?? 0) + 1);
  }
  return [...seen].map(([msg, count]) => `${count} × "${msg}"`);
}

export function problemsNote(procs: (Proc | undefined)[]): string {
  const problems = procs.flatMap(loggedProblems);
  return problems.length === 0 ? '' : `\n\nLogged by Tollgate during the run: ${problems.join('; ')}.`;
}

/** The result on stdout, and in `out` when given (a file of the user's: docs/performance.md quotes runs by hand). */
export function report(body: string, out: string | undefined): void {
  process.stdout.write(`\n${body}\n`);
  if (out === undefined) return;
  // Relative to where the user typed the command: npm runs scripts from the package root.
  const file = path.resolve(env.INIT_CWD ?? process.cwd(), out);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${body}\n`);
  log(`result written to ${file}`);
}
