// `npm run bench -- verify`: POST /tollgate/verify against the proxy, for the same key and plan, in one
// Tollgate (Redis mode + Postgres, one process) and one run: req/s and p99 of each, alternating rounds,
// and the Redis script calls (EVALSHA/EVAL, INFO commandstats of a private redis-server) per verify and
// per proxied request of that hot key, net of an idle stretch of the same length (usage pushes, the
// flusher), and Tollgate's CPU time per request (steadier than req/s on a shared machine); then each
// one request at a time (wrk -c1), where the proxy's hop to its backend shows in the latency. Verify is
// called with the root token, and once more with an admin token holding only keys:verify (what a
// server would hold), which each replica reads from the database at most every 500 ms.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import {
  CONNECTIONS,
  DURATION,
  PLAN_ID,
  PORT,
  ROOT,
  ROOT_TOKEN,
  ROUNDS,
  WARMUP,
  log,
  run,
} from '../lib/config.ts';
import { treeCpuUs } from '../lib/processes.ts';
import { fmt, machine, median, problemsNote, ratio } from '../lib/report.ts';
import {
  buildTollgate,
  commandStats,
  createKey,
  ensurePlan,
  ensureTools,
  flushRedis,
  freshDatabase,
  management,
  privateRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';

const VERIFY_SCRIPT = path.join(ROOT, 'bench/verify.lua');

interface Measured {
  readonly rps: number[];
  readonly p99: number[];
  /** Tollgate's CPU time (user + system, its process tree) per request answered, µs. */
  readonly cpu: number[];
}

async function scriptCalls(redis: Redis): Promise<number> {
  const stats = await commandStats(redis);
  return (stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0);
}

export async function verify(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  run.redisUrl = await privateRedis();
  await flushRedis(run.redisUrl);
  await startBackend();
  const port = PORT.tollgateRedis;
  const tg = await startTollgate({
    name: 'verify',
    port,
    mode: 'redis',
    databaseUrl: await freshDatabase(),
    redisUrl: run.redisUrl,
  });
  await ensurePlan(port);
  const secret = await createKey(port, 'verify-bench');
  const verifier = String(
    (await management(port, '/tollgate/admin-tokens', { name: 'bench verifier', scopes: ['keys:verify'] }))
      .secret,
  );
  const base = `http://127.0.0.1:${port}`;
  /** wrk -c1: one request at a time, the time each takes to be answered. */
  const ONE_AT_A_TIME = { connections: 1, threads: 1 } as const;
  const proxied = (seconds: number, one = false) =>
    wrk({
      url: `${base}/bench/item?id=42`,
      seconds,
      headers: { authorization: `Bearer ${secret}` },
      ...(one && ONE_AT_A_TIME),
    });
  // The request the proxy gets above, as a server behind no proxy would ask about it.
  const verified = (seconds: number, token = ROOT_TOKEN, one = false) =>
    wrk({
      url: `${base}/tollgate/verify`,
      seconds,
      headers: { authorization: `Bearer ${token}` },
      script: VERIFY_SCRIPT,
      scriptEnv: { VERIFY_BODY: JSON.stringify({ key: secret, path: '/bench/item', method: 'GET' }) },
      ...(one && ONE_AT_A_TIME),
    });

  const redis = new Redis(run.redisUrl);
  try {
    log('warm-up: proxy, then verify');
    await proxied(WARMUP);
    await verified(WARMUP);
    await verified(WARMUP, verifier);
    const results: Record<'proxy' | 'verify' | 'token', Measured> = {
      proxy: { rps: [], p99: [], cpu: [] },
      verify: { rps: [], p99: [], cpu: [] },
      token: { rps: [], p99: [], cpu: [] },
    };
    const pid = tg.child.pid as number;
    /** One load, noted with Tollgate's CPU time over it. */
    const measure = async (into: Measured, load: (seconds: number) => Promise<WrkResult>) => {
      const cpuBefore = treeCpuUs(pid);
      const r = await load(DURATION);
      into.cpu.push((treeCpuUs(pid) - cpuBefore) / r.requests);
      if (r.non2xx + r.socketErrors > 0)
        throw new Error(`${r.non2xx} non-2xx answers, ${r.socketErrors} socket errors`);
      into.rps.push(r.rps);
      into.p99.push(r.p99);
      return r;
    };
    // Script calls: an idle stretch (background work alone), then one stretch of each load.
    const idleBefore = await scriptCalls(redis);
    await sleep(DURATION * 1000);
    const idle = (await scriptCalls(redis)) - idleBefore;
    const perRequest: Record<'proxy' | 'verify', number> = { proxy: NaN, verify: NaN };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating, the first load of each round changing, so drift falls on both alike.
      const order = round % 2 === 0 ? (['verify', 'proxy'] as const) : (['proxy', 'verify'] as const);
      for (const target of order) {
        log(`round ${round + 1}/${ROUNDS}: ${target}`);
        const before = await scriptCalls(redis);
        const r = await measure(results[target], target === 'proxy' ? proxied : verified);
        const calls = (await scriptCalls(redis)) - before;
        if (round === 0) perRequest[target] = Math.max(0, calls - idle) / r.requests;
      }
      log(`round ${round + 1}/${ROUNDS}: verify with an admin token`);
      await measure(results.token, (seconds) => verified(seconds, verifier));
    }
    // How long one request takes to be answered, without a queue: the proxy's hop to the backend shows.
    log('one request at a time: proxy, then verify');
    const single = {
      proxy: await proxied(DURATION, true),
      verify: await verified(DURATION, ROOT_TOKEN, true),
    };
    const singleRow = (label: string, r: WrkResult) =>
      `| ${label} | ${fmt(r.rps)} | ${fmt(r.p50, 3)} | ${fmt(r.p99, 3)} |`;
    const rps = (m: Measured) => median(m.rps);
    const row = (label: string, m: Measured, calls?: number) =>
      `| ${label} | ${fmt(rps(m))} | ${m.rps.map((x) => fmt(x)).join(' / ')} | ${fmt(median(m.p99), 2)} | ${fmt(median(m.cpu), 1)} | ${ratio(rps(m), rps(results.proxy))} | ${calls === undefined ? '—' : `**${fmt(calls, 4)}**`} |`;
    return (
      [
        `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- verify\`: one Tollgate (Redis mode + Postgres, one process, NODE_ENV=production), one key bound to a plan of one limit that never refuses (${PLAN_ID}, an hour); wrk -c${CONNECTIONS} for ${DURATION} s per load, ${ROUNDS} rounds alternating proxy and verify (median; every round listed). The proxy forwards \`GET /bench/item\` to nginx; verify answers \`POST /tollgate/verify {key, path: "/bench/item", method: "GET"}\` for the same key: the same admission, the same usage counting, no backend. Script calls: \`INFO commandstats\` (EVALSHA + EVAL) of a private redis-server during the first round's load, less an idle stretch of ${DURATION} s (${fmt(idle)} calls: usage pushes and the flusher).`,
        '',
        machine(),
        '',
        '| load | req/s (median) | each round | p99 ms (median) | Tollgate CPU µs per request (median) | req/s against the proxy | Redis script calls per request |',
        '|---|--:|--:|--:|--:|--:|--:|',
        row('proxy: `GET /bench/item`, forwarded', results.proxy, perRequest.proxy),
        row('verify, root token', results.verify, perRequest.verify),
        row('verify, admin token holding `keys:verify`', results.token),
        '',
        `One request at a time (wrk -t1 -c1, ${DURATION} s each, after the rounds):`,
        '',
        '| one connection | req/s | p50 ms | p99 ms |',
        '|---|--:|--:|--:|',
        singleRow('proxy, forwarded', single.proxy),
        singleRow('verify, root token', single.verify),
      ].join('\n') + problemsNote([tg])
    );
  } finally {
    redis.disconnect();
  }
}
