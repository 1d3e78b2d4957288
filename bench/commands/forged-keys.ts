// `npm run bench -- forged-keys`: a flood of secrets with a wrong checksum (docs/guides/leaked-keys.md)
// is answered at least as fast as a CORS preflight, with no store call per request. One Tollgate (Redis
// mode + Postgres, one process): req/s and p99 of preflights (answered by Tollgate itself,
// bench/preflight-per-request.lua) against wrong-checksum secrets (bench/forged-key.lua, 10,000
// secrets in turn), in alternating rounds, and Tollgate's CPU time per request of each load (BENCH_PIN=1:
// Tollgate on a CPU of its own, wrk on the others); then the Redis commands (INFO commandstats of a private
// redis-server) and Postgres reads and transactions (pg_stat_database) during one forged load, beside
// an idle stretch of the same length. From one address, the first 100 wrong secrets of a minute are
// answered 401 and the rest 429: both from memory. Last, the same two requests handed in process to a
// second Tollgate's listener (bench/lib/listener-driver.ts), with no socket and no wrk: µs per request
// in alternating rounds, what Tollgate's path and Node's HTTP objects cost without the loopback.
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { alternatingRounds, roundsTable } from '../lib/alternating-rounds.ts';
import { CLIENT_CPUS, CONNECTIONS, DURATION, PIN, PORT, ROOT, ROUNDS, TARGET_CPUS } from '../lib/config.ts';
import { THREADS, WARMUP, log, run } from '../lib/config.ts';
import { pinTree, stopProc, treeCpuUs } from '../lib/processes.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { buildTollgate, ensureTools, freshDatabase, startBackend, startTollgate } from '../lib/services.ts';
import { commandStats, flushRedis, privateRedis } from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';
import { pgStats, type PgStats } from './cost.ts';

// Both scripts hand wrk each request from a Lua function, so both loads cost wrk alike.
const PREFLIGHT_SCRIPT = path.join(ROOT, 'bench/preflight-per-request.lua');
const FORGED_SCRIPT = path.join(ROOT, 'bench/forged-key.lua');
const DRIVER = path.join(ROOT, 'bench/lib/listener-driver.ts');
const DRIVER_ROUNDS = 21;
const DRIVER_REQUESTS = 10_000;
/** Long enough for the driver's rounds on the slowest machine seen; a driver stuck past it is a failure. */
const DRIVER_DEADLINE_MS = 600_000;

const totalCommands = async (redis: Redis) =>
  [...(await commandStats(redis)).values()].reduce((a, b) => a + b, 0);

/** Redis commands and Postgres reads and commits while `work` runs. */
async function storeCalls(redis: Redis, work: () => Promise<unknown>): Promise<PgStats & { redis: number }> {
  const [redisBefore, pgBefore] = [await totalCommands(redis), await pgStats()];
  await work();
  // A backend reports its counts when idle: give the pool a second to report them.
  await sleep(1_500);
  const [redisAfter, pgAfter] = [await totalCommands(redis), await pgStats()];
  return {
    redis: redisAfter - redisBefore,
    commits: pgAfter.commits - pgBefore.commits,
    writes: pgAfter.writes - pgBefore.writes,
    reads: pgAfter.reads - pgBefore.reads,
  };
}

interface Driven {
  readonly preflight: number[];
  readonly forged: number[];
  readonly statuses: Record<'preflight' | 'forged', number>;
}

/**
 * µs per request of preflights and wrong-checksum secrets handed to a Tollgate's listener in its own
 * process (bench/lib/listener-driver.ts), in alternating rounds: the rows of the report.
 */
async function inProcess(databaseUrl: string): Promise<string[]> {
  const out = path.join(run.workDir, 'listener-driver.json');
  const port = PORT.tollgateRedisW2;
  const driven = await startTollgate({
    name: 'forged-keys-in-process',
    port,
    mode: 'redis',
    databaseUrl,
    redisUrl: run.redisUrl,
    extraEnv: {
      CORS_ALLOWED_ORIGINS: 'https://app.example.com',
      DRIVER_PORT: String(port),
      DRIVER_OUT: out,
      DRIVER_ROUNDS: String(DRIVER_ROUNDS),
      DRIVER_REQUESTS: String(DRIVER_REQUESTS),
    },
    nodeArgs: ['--import', DRIVER],
  });
  if (PIN) pinTree(driven.child.pid, TARGET_CPUS);
  const deadline = Date.now() + DRIVER_DEADLINE_MS;
  while (!driven.exited && Date.now() < deadline) await sleep(200);
  await stopProc(driven);
  if (!fs.existsSync(out)) throw new Error(`the listener driver wrote no result (log: ${driven.logFile})`);
  const result = JSON.parse(fs.readFileSync(out, 'utf8')) as Driven;
  const ratios = result.forged.map((us, i) => us / result.preflight[i]!);
  const us = (rounds: number[]) => rounds.map((x) => fmt(x, 2)).join(' / ');
  return [
    `In process (bench/lib/listener-driver.ts: ${DRIVER_ROUNDS} alternating rounds of ${fmt(DRIVER_REQUESTS)} requests, one at a time, handed to a second Tollgate's listener with no socket; the last answers ${result.statuses.preflight} and ${result.statuses.forged}), µs per request, median (every round):`,
    '',
    `- preflight (204): ${fmt(median(result.preflight), 2)} (${us(result.preflight)})`,
    `- wrong checksum (429): ${fmt(median(result.forged), 2)} (${us(result.forged)})`,
    `- wrong checksum ÷ preflight, round by round (median): ${fmt(median(ratios), 3)}`,
  ];
}

export async function forgedKeys(): Promise<string> {
  ensureTools(['wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  run.redisUrl = await privateRedis();
  await flushRedis(run.redisUrl);
  await startBackend();
  const port = PORT.tollgateRedis;
  const databaseUrl = await freshDatabase();
  const tollgate = await startTollgate({
    name: 'forged-keys',
    port,
    mode: 'redis',
    databaseUrl,
    redisUrl: run.redisUrl,
    extraEnv: { CORS_ALLOWED_ORIGINS: 'https://app.example.com' },
  });
  const pid = tollgate.child.pid!;
  // BENCH_PIN=1: Tollgate on a CPU of its own, wrk on the others, so that the larger answers of the
  // forged load (a body, where a preflight has none) cost wrk nothing Tollgate's CPU would give up.
  if (PIN) pinTree(pid, TARGET_CPUS);
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  // Tollgate's CPU µs per request of each load, its warm-up first.
  const cpu = { preflight: [] as number[], forged: [] as number[] };
  const measured = (side: keyof typeof cpu, script: string) => async (seconds: number) => {
    const before = treeCpuUs(pid);
    const result = await wrk({ url, seconds, script, cpus: PIN ? CLIENT_CPUS : undefined });
    cpu[side].push((treeCpuUs(pid) - before) / result.requests);
    return result;
  };
  const loads = {
    preflight: measured('preflight', PREFLIGHT_SCRIPT),
    forged: measured('forged', FORGED_SCRIPT),
  };
  const redis = new Redis(run.redisUrl);
  try {
    let forgedRequests = 0;
    // Warmed up first: the counts below are those of a steady flood.
    await loads.forged(WARMUP);
    const during = await storeCalls(redis, async () => {
      forgedRequests = (await loads.forged(DURATION)).requests;
    });
    const idle = await storeCalls(redis, () => sleep(DURATION * 1_000));
    log(`forged load: ${forgedRequests} requests, ${JSON.stringify(during)}; idle: ${JSON.stringify(idle)}`);
    const rounds = await alternatingRounds(loads);
    await stopProc(tollgate);
    const driven = await inProcess(databaseUrl);
    const label = { preflight: 'preflight (204)', forged: 'wrong checksum (401, then 429)' };
    return [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`${PIN ? 'BENCH_PIN=1 ' : ''}npm run bench -- forged-keys\` (Redis mode + Postgres, wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s, medians${PIN ? `; Tollgate pinned to CPU ${TARGET_CPUS}, wrk to CPU ${CLIENT_CPUS}` : ''}).`,
      '',
      machine(),
      '',
      ...roundsTable(rounds, label, 'preflight'),
      '',
      "Tollgate's CPU µs per request during each load, median (every round):",
      '',
      ...(['preflight', 'forged'] as const).map((side) => {
        const rounds = cpu[side].slice(-ROUNDS);
        return `- ${label[side]}: ${fmt(median(rounds), 1)} (${rounds.map((us) => fmt(us, 1)).join(' / ')})`;
      }),
      '',
      `Store calls during one forged load of ${fmt(forgedRequests)} requests (${DURATION} s), beside an idle stretch as long:`,
      '',
      '| | Redis commands | Postgres transactions | Postgres tuples read |',
      '|---|--:|--:|--:|',
      `| forged load | ${fmt(during.redis)} | ${fmt(during.commits)} | ${fmt(during.reads)} |`,
      `| idle | ${fmt(idle.redis)} | ${fmt(idle.commits)} | ${fmt(idle.reads)} |`,
      '',
      ...driven,
    ].join('\n');
  } finally {
    redis.disconnect();
  }
}
