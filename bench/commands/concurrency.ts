// `npm run bench -- concurrency`: CPU per request as the requests in flight per process fall (what a
// replica that shares its CPU, or gets a share of the connections, pays per request), against a bare forwarder.
import { Redis } from 'ioredis';
import {
  BACKEND_URL,
  CLIENT_CPUS,
  CONNECTIONS,
  CPU_COUNT,
  DURATION,
  NODE,
  PEER_SECRET,
  PORT,
  TARGET_CPUS,
  WARMUP,
  env,
  log,
  run,
} from '../lib/config.ts';
import { httpOk, pinTree, startProc, treeCpuUs, waitFor } from '../lib/processes.ts';
import { fmt, problemsNote } from '../lib/report.ts';
import {
  buildTollgate,
  commandStats,
  createKey,
  ensurePlan,
  ensureTools,
  flushRedis,
  freshDatabase,
  have,
  privateRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

export async function concurrency(): Promise<string> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  if (CPU_COUNT < 2 || !have('taskset'))
    throw new Error('needs 2 CPUs and taskset: the target runs on a CPU of its own');
  run.redisUrl = await privateRedis(CLIENT_CPUS);
  await flushRedis(run.redisUrl);
  const backend = await startBackend();
  pinTree(backend.child.pid, CLIENT_CPUS);
  const databaseUrl = await freshDatabase();
  const port = PORT.tollgateRedis;
  const tg = await startTollgate({
    name: 'concurrency',
    port,
    mode: 'redis',
    databaseUrl,
    redisUrl: run.redisUrl,
  });
  await ensurePlan(port);
  const limited = await createKey(port, 'concurrency-limited');
  const unlimited = await createKey(port, 'concurrency-no-plan', false);
  const forwarderPort = PORT.replicaBase + 7;
  const forwarder = startProc('concurrency-forwarder', NODE, ['bench/peers/engine.ts'], {
    PORT: String(forwarderPort),
    BACKEND_URL,
    ENGINE: 'dispatch',
  });
  await waitFor(forwarder, 'first forwarded request', httpOk(`http://127.0.0.1:${forwarderPort}/`));
  pinTree(tg.child.pid, TARGET_CPUS);
  pinTree(forwarder.child.pid, TARGET_CPUS);
  const redis = new Redis(run.redisUrl);
  const targets = [
    { label: 'Tollgate, key with a plan (limiter in Redis)', proc: tg, port, secret: limited, limited: true },
    {
      label: 'Tollgate, key without a plan (no limiter call)',
      proc: tg,
      port,
      secret: unlimited,
      limited: false,
    },
    {
      label: 'bare forwarder (bench/peers/engine.ts)',
      proc: forwarder,
      port: forwarderPort,
      secret: PEER_SECRET,
      limited: false,
    },
  ];
  const levels = (env.BENCH_CONCURRENCY ?? '50,13,4,1')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const rows: string[] = [];
  try {
    for (const t of targets) {
      const pid = t.proc.child.pid as number;
      const load = (connections: number, seconds: number) =>
        wrk({
          url: `http://127.0.0.1:${t.port}/bench/item?id=42`,
          seconds,
          headers: { authorization: `Bearer ${t.secret}` },
          threads: 1,
          connections,
          cpus: CLIENT_CPUS,
        });
      await load(CONNECTIONS, WARMUP);
      for (const c of levels) {
        await load(c, 2);
        const evalsha0 = (await commandStats(redis)).get('evalsha') ?? 0;
        const cpu0 = treeCpuUs(pid);
        const r = await load(c, DURATION);
        const cpuUs = treeCpuUs(pid) - cpu0;
        const evalsha = ((await commandStats(redis)).get('evalsha') ?? 0) - evalsha0;
        rows.push(
          `| ${t.label} | ${c} | ${fmt(r.rps)} | ${fmt(cpuUs / r.requests, 1)} | ${fmt((cpuUs / (DURATION * 1_000_000)) * 100)} % | ${fmt(r.p99, 2)} | ${t.limited ? fmt(evalsha / r.requests, 3) : '–'} |`,
        );
        log(`${t.label}, -c${c}: ${fmt(r.rps)} req/s, ${fmt(cpuUs / r.requests, 1)} µs CPU per request`);
      }
    }
  } finally {
    redis.disconnect();
  }
  const body =
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- concurrency\` (one process on CPU ${TARGET_CPUS}; wrk -t1, the nginx backend and a private redis-server on CPU ${CLIENT_CPUS}; ${DURATION} s per row after a 2 s warm-up at the same concurrency). CPU is the process's user + system time from /proc over the requests wrk completed; \`EVALSHA\` per request from Redis' INFO commandstats.`,
      '',
      '| target | wrk connections | req/s | CPU µs per request | CPU busy | p99 ms | EVALSHA per request |',
      '|---|--:|--:|--:|--:|--:|--:|',
      ...rows,
    ].join('\n') + problemsNote([tg, forwarder]);
  return body;
}
