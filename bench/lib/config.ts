// The bench's settings: where things are, the environment knobs, the fixed ports and identities.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const NODE = path.join(ROOT, 'node_modules/.bin/node');
export const TOLLGATE_MAIN = path.join(ROOT, 'dist/src/main.js');
/** Tollgate runs with the Node flags of `npm start` (between `node` and the script in package.json). */
export const TOLLGATE_NODE_ARGS: string[] = (
  JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }
).scripts.start
  .split(/\s+/)
  .filter((word) => word.startsWith('--'));
export const STATE_DIR = '/tmp/tollgate-bench';

export const env = process.env;

export function positive(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

export const DURATION = positive(env.BENCH_DURATION, 10);
export const ROUNDS = positive(env.BENCH_ROUNDS, 3);
export const WARMUP = positive(env.BENCH_WARMUP, 3);
// Per replica in `scale`: a fresh process is measured once its JIT has settled.
export const REPLICA_WARMUP = positive(env.BENCH_REPLICA_WARMUP, 10);
export const CONNECTIONS = positive(env.BENCH_CONNECTIONS, 50);
export const THREADS = 2;
export const NICE = /^-?\d+$/.test(env.BENCH_NICE ?? '') ? String(env.BENCH_NICE) : undefined;
export const CPU_COUNT = os.cpus().length;
// Pinned runs: the target on the last CPU, wrk and the backend on the others.
export const TARGET_CPUS = String(CPU_COUNT - 1);
export const CLIENT_CPUS = CPU_COUNT === 2 ? '0' : `0-${CPU_COUNT - 2}`;
export const PIN = env.BENCH_PIN === '1' && CPU_COUNT >= 2;
export const REDIS_URL = env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
export const PG_URL = env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
export const DB_NAME = 'tollgate_bench';
export const ROOT_TOKEN = 'bench-root-token-0123456789abcdef';
export const PEER_SECRET = 'bench-secret-3b9f0c2d';
export const PLAN_ID = 'bench-unlimited';
/** The same, as a burst limit and a quota: what a plan of two limits costs against one. */
export const TWO_LIMIT_PLAN_ID = 'bench-unlimited-two-limits';
// Far above anything wrk can send in an hour: every target counts the key but never refuses.
export const HUGE_LIMIT = 1_000_000_000_000;

export const PORT = {
  backend: 18080,
  nginx: 18081,
  haproxy: 18082,
  express: 18083,
  fastify: 18084,
  tollgateEmbedded: 18085,
  tollgateRedis: 18086,
  tollgateRedisW2: 18087,
  tollgateEmbeddedBaseline: 18088,
  tollgateRedisBaseline: 18089,
  replicaBase: 18090,
  routes: 18120,
  events: 18130,
  opsOffset: 100,
} as const;
export const BACKEND_URL = `http://127.0.0.1:${PORT.backend}`;

/**
 * BENCH_BASELINE: the folder of another build of Tollgate (an older commit, built there): the table
 * then runs it too, embedded and in Redis mode, in the same alternating rounds as this tree's build,
 * so a before/after comparison is one run on one machine.
 */
export const BASELINE = env.BENCH_BASELINE ? path.resolve(env.BENCH_BASELINE) : undefined;

/** What one run changes as it goes: its work directory and the Redis its targets use. */
export const run = { workDir: '', redisUrl: REDIS_URL };

export function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}
