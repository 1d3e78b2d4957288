// `npm run bench -- hot-consumer` (also the last table of `cost`): limiter round trips per request of a
// hot consumer whose traffic is spread over its 10 keys and 2 replicas (docs/decisions/0025: at most 0.05). Two
// Tollgate replicas in Redis mode on one database; one wrk per replica, each sending every key in turn
// (bench/rotate-keys.lua). A replica counts its limiter's round trips itself: the `consume` operation
// of tollgate_redis_command_duration_seconds, one per script call (the limiter makes no other call on a
// request's path), so the usage pushes the same Redis serves are not mistaken for them.
import fs from 'node:fs';
import path from 'node:path';
import { CONNECTIONS, DURATION, PLAN_ID, PORT, ROOT, WARMUP, env, log, run } from '../lib/config.ts';
import { stopProc, type Proc } from '../lib/processes.ts';
import { fmt } from '../lib/report.ts';
import {
  buildTollgate,
  createConsumer,
  createKey,
  ensurePlan,
  ensureTools,
  flushRedis,
  freshDatabase,
  privateRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';

const KEYS = 10;
const REPLICAS = 2;
/** wrk connections per replica, one row each: a hot consumer, and one with few requests in flight. */
const LOADS = (env.BENCH_CONSUMER_CONNECTIONS ?? `${CONNECTIONS},4`)
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const CONSUME_CALLS = 'tollgate_redis_command_duration_seconds_count{operation="consume"}';

interface Row {
  readonly shape: string;
  readonly connections: number;
  readonly loads: WrkResult[];
  readonly calls: number;
}

/** The limiter's round trips so far, summed over the replicas (their ops listeners' /metrics). */
async function consumeCalls(ports: readonly number[]): Promise<number> {
  let calls = 0;
  for (const port of ports) {
    const text = await (await fetch(`http://127.0.0.1:${port + PORT.opsOffset}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(CONSUME_CALLS + ' '));
    calls += line === undefined ? 0 : Number(line.slice(CONSUME_CALLS.length + 1));
  }
  return calls;
}

/** The table, with two replicas on the Redis at `redisUrl` (flushed first) and the database at `databaseUrl`. */
export async function hotConsumerTable(redisUrl: string, databaseUrl: string): Promise<string> {
  await flushRedis(redisUrl);
  const ports = Array.from({ length: REPLICAS }, (_, n) => PORT.replicaBase + n);
  const replicas: Proc[] = [];
  // One after the other: the first migrates the database.
  for (const [n, port] of ports.entries())
    replicas.push(
      await startTollgate({ name: `hot-consumer-${n}`, port, mode: 'redis', databaseUrl, redisUrl }),
    );
  const admin = ports[0]!;
  await ensurePlan(admin);
  // Every plan is huge: the limiter decides every request and refuses none.
  const shapes: { shape: string; keyPlan: boolean }[] = [
    { shape: 'the consumer’s plan alone', keyPlan: false },
    { shape: 'a plan on each key and on the consumer', keyPlan: true },
  ];
  const rows: Row[] = [];
  try {
    for (const [s, { shape, keyPlan }] of shapes.entries()) {
      const consumerId = await createConsumer(admin, `hot-${s}`, PLAN_ID);
      const secrets: string[] = [];
      for (let k = 0; k < KEYS; k++)
        secrets.push(await createKey(admin, `hot-${s}-${k}`, keyPlan, PLAN_ID, consumerId));
      const keysFile = path.join(run.workDir, `hot-consumer-${s}.keys`);
      fs.writeFileSync(keysFile, secrets.join('\n') + '\n');
      const load = (seconds: number, connections: number) =>
        Promise.all(
          ports.map((port) =>
            wrk({
              url: `http://127.0.0.1:${port}/bench/item?id=42`,
              seconds,
              connections,
              threads: Math.min(2, connections),
              script: path.join(ROOT, 'bench/rotate-keys.lua'),
              scriptEnv: { KEYS_FILE: keysFile },
            }),
          ),
        );
      // Every key cached on every replica, and the JIT warm, before anything is counted.
      await load(WARMUP, CONNECTIONS);
      for (const connections of LOADS) {
        log(`hot consumer, ${shape}, wrk -c${connections} on each replica`);
        const before = await consumeCalls(ports);
        const loads = await load(DURATION, connections);
        rows.push({ shape, connections, loads, calls: (await consumeCalls(ports)) - before });
      }
    }
  } finally {
    for (const replica of replicas) await stopProc(replica);
  }
  const sum = (loads: WrkResult[], value: (r: WrkResult) => number) =>
    loads.reduce((n, r) => n + value(r), 0);
  return [
    `Hot consumer: one consumer, ${KEYS} keys, ${REPLICAS} Tollgate replicas in Redis mode, each loaded by its own wrk sending every key in turn (bench/rotate-keys.lua), ${DURATION} s per row after a ${WARMUP} s warm-up. Limiter round trips are the replicas' own count of limiter script calls (\`${CONSUME_CALLS}\`, summed); the limiter makes no other call on a request's path.`,
    '',
    '| plans | wrk connections per replica | requests | req/s | non-2xx | limiter round trips | per request |',
    '|---|--:|--:|--:|--:|--:|--:|',
    ...rows.map((r) => {
      const requests = sum(r.loads, (l) => l.requests);
      return `| ${r.shape} | ${r.connections} | ${fmt(requests)} | ${fmt(sum(r.loads, (l) => l.rps))} | ${fmt(sum(r.loads, (l) => l.non2xx + l.socketErrors))} | ${fmt(r.calls)} | **${fmt(r.calls / requests, 4)}** |`;
    }),
  ].join('\n');
}

export async function hotConsumer(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  run.redisUrl = await privateRedis();
  await startBackend();
  return hotConsumerTable(run.redisUrl, await freshDatabase());
}
