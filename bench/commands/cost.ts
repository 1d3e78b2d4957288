// `npm run bench -- cost`: Redis commands per proxied request (INFO commandstats, MONITOR for what
// runs inside Lua) and Postgres writes per 10,000 requests (pg_stat_database), net of an idle run.
import pg from 'pg';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CONNECTIONS,
  DB_NAME,
  DURATION,
  HUGE_LIMIT,
  PG_URL,
  PLAN_ID,
  PORT,
  REDIS_URL,
  TWO_LIMIT_PLAN_ID,
  WARMUP,
  env,
  log,
  positive,
  run,
} from '../lib/config.ts';
import { stopProc } from '../lib/processes.ts';
import { fmt, problemsNote } from '../lib/report.ts';
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
  type TollgateOptions,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';
import { hotConsumerTable } from './hot-consumer.ts';

function statsDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

export interface PgStats {
  commits: number;
  writes: number;
  reads: number;
}

export async function pgStats(): Promise<PgStats> {
  const client = new pg.Client({ connectionString: `${PG_URL}/postgres` });
  await client.connect();
  try {
    const { rows } = await client.query<{ xact_commit: string; writes: string; reads: string }>(
      'SELECT xact_commit, tup_inserted + tup_updated + tup_deleted AS writes, tup_fetched AS reads FROM pg_stat_database WHERE datname = $1',
      [DB_NAME],
    );
    const row = rows[0];
    return {
      commits: Number(row?.xact_commit ?? 0),
      writes: Number(row?.writes ?? 0),
      reads: Number(row?.reads ?? 0),
    };
  } finally {
    await client.end();
  }
}

/** Many keys each seen once a minute (BENCH_COST_KEYS, default 10,000): the shape of a fleet of light users. */
const SPREAD_KEYS = positive(env.BENCH_COST_KEYS, 10_000);
const SPREAD_SECONDS = 60;

/**
 * Creates `count` keys, then sends one request with each, spread evenly over a minute; returns the
 * Postgres rows written during that minute and the 3 s after it (the service stopped on both sides).
 */
async function keysOnceAMinute(
  options: TollgateOptions,
  count: number,
): Promise<{ writes: number; requests: number }> {
  let tg = await startTollgate(options);
  const secrets: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        next++;
        secrets.push(await createKey(options.port, `spread-${next}`));
      }
    }),
  );
  await stopProc(tg);
  log(`${fmt(count)} keys, one request each over ${SPREAD_SECONDS} s`);
  const before = await pgStats();
  tg = await startTollgate(options);
  const started = Date.now();
  let sent = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (sent < secrets.length) {
        const i = sent++;
        const due = started + (i * SPREAD_SECONDS * 1000) / secrets.length;
        if (due > Date.now()) await sleep(due - Date.now());
        const res = await fetch(`http://127.0.0.1:${options.port}/bench/item?id=${i}`, {
          headers: { authorization: `Bearer ${secrets[i]}` },
        });
        await res.arrayBuffer();
      }
    }),
  );
  await sleep(3000);
  await stopProc(tg);
  return { writes: (await pgStats()).writes - before.writes, requests: sent };
}

export async function cost(): Promise<string> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  run.redisUrl = await privateRedis();
  await flushRedis(run.redisUrl);
  await startBackend();
  const databaseUrl = await freshDatabase();
  const port = PORT.tollgateRedis;
  const options: TollgateOptions = { name: 'cost', port, mode: 'redis', databaseUrl, redisUrl: run.redisUrl };
  const idleSeconds = DURATION + 3;

  // Set-up, then a stop: Postgres backends flush their statistics when they exit, so every
  // snapshot below is taken with the service stopped and nothing pending.
  let tg = await startTollgate(options);
  await ensurePlan(port);
  const secret = await createKey(port, 'cost');
  const twoLimitSecret = await createKey(port, 'cost-two-limits', true, TWO_LIMIT_PLAN_ID);
  // The one-limit plan and a balance too large to run out: a balance is never leased (a top-up must
  // be in force for the next request), so each of its requests is decided in Redis.
  const creditKey = await management(port, '/consumer-api-key/create', {
    name: 'cost-credits',
    rateLimitId: PLAN_ID,
    credits: { remaining: HUGE_LIMIT },
  });
  const creditHeaders = { authorization: `Bearer ${String(creditKey.secret)}` };
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  const headers = { authorization: `Bearer ${secret}` };
  await wrk({ url, seconds: WARMUP, headers });
  await wrk({ url, seconds: WARMUP, headers: { authorization: `Bearer ${twoLimitSecret}` } });
  await wrk({ url, seconds: WARMUP, headers: creditHeaders });
  await stopProc(tg);

  const redis = new Redis(run.redisUrl);
  try {
    // Baseline: the same start, idle time and stop without traffic (usage pushes, flusher, pub/sub).
    // MONITOR tells the client's commands from the ones a Lua script runs (source "lua"), which
    // commandstats counts alike: the client's are the round trips. `lua` is swapped per phase.
    const monitor = await new Redis(run.redisUrl).monitor();
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
    // The same load with a key whose plan holds a burst limit and a monthly quota.
    tg = await startTollgate(options);
    const twoLimitLoad = await wrk({
      url,
      seconds: DURATION,
      headers: { authorization: `Bearer ${twoLimitSecret}` },
    });
    await sleep(3000);
    await stopProc(tg);
    const r3 = await commandStats(redis);
    tg = await startTollgate(options);
    const creditLoad = await wrk({ url, seconds: DURATION, headers: creditHeaders });
    await sleep(3000);
    await stopProc(tg);
    const r4 = await commandStats(redis);
    const spread = await keysOnceAMinute(options, SPREAD_KEYS);
    // The idle run's rows, scaled to the spread run's length, are not the keys'.
    const spreadIdle = ((pg1.writes - pg0.writes) * (SPREAD_SECONDS + 3)) / idleSeconds;
    const loadSeconds = DURATION + 3;

    const idle = statsDelta(r0, r1);
    const loaded = statsDelta(r1, r2);
    idle.delete('monitor');
    const n = load.requests;
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    const commands = [...new Set([...idle.keys(), ...loaded.keys()])].sort(
      (a, b) => (loaded.get(b) ?? 0) - (loaded.get(a) ?? 0),
    );
    const net = (c: string) =>
      (loaded.get(c) ?? 0) - (fromLua.get(c) ?? 0) - ((idle.get(c) ?? 0) - (idleLua.get(c) ?? 0));
    const roundTrips = commands.reduce((s, c) => s + net(c), 0);
    const per10k = (x: number) => fmt((x * 10_000) / n, 1);
    // Script calls (the limiter's, and the usage pushes') net of the idle run.
    const scriptCalls = (delta: Map<string, number>) =>
      (delta.get('evalsha') ?? 0) +
      (delta.get('eval') ?? 0) -
      (idle.get('evalsha') ?? 0) -
      (idle.get('eval') ?? 0);
    const twoLimits = statsDelta(r2, r3);
    const credits = statsDelta(r3, r4);
    const perSecond = (x: number) => fmt(x / loadSeconds, 1);
    const pgRow = (label: string, a: number, b: number, c: number, bold = false) => {
      const value = per10k(c - b - (b - a));
      return `| ${label} | ${fmt(c - b)} | ${fmt(b - a)} | ${bold ? `**${value}**` : value} | ${perSecond(c - b - (b - a))} |`;
    };
    const body =
      [
        `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- cost\` (Tollgate Redis mode + Postgres, one process, one key bound to a huge plan; wrk -c${CONNECTIONS} for ${DURATION} s: ${fmt(n)} requests, ${fmt(load.rps)} req/s, non-2xx ${fmt(load.non2xx + load.socketErrors)}; Redis: ${run.redisUrl === REDIS_URL ? 'the shared server, so other suites may add noise' : 'a private redis-server, nothing else on it'}). Counted from \`INFO commandstats\` and \`pg_stat_database\` deltas over the load and the ${loadSeconds - DURATION} s after it. "Idle" is the same start, ${idleSeconds} s and stop with no traffic; "net" subtracts it. Commands run inside a Lua script (seen through MONITOR) are no round trip of their own.`,
        '',
        '| Redis command | calls under load | of them inside Lua | calls idle | net round trips per proxied request |',
        '|---|--:|--:|--:|--:|',
        ...commands.map(
          (c) =>
            `| ${c} | ${fmt(loaded.get(c) ?? 0)} | ${fmt(fromLua.get(c) ?? 0)} | ${fmt(idle.get(c) ?? 0)} | ${fmt(net(c) / n, 4)} |`,
        ),
        `| **all** | ${fmt(sum(loaded))} | ${fmt(sum(fromLua))} | ${fmt(sum(idle))} | **${fmt(roundTrips / n, 4)}** |`,
        '',
        `Redis commands executed per proxied request, Lua included: ${fmt((sum(loaded) - sum(idle)) / n, 2)}.`,
        '',
        '| plan of the key (same process, same load) | requests | req/s | script calls net of idle | per proxied request |',
        '|---|--:|--:|--:|--:|',
        `| one limit (an hour) | ${fmt(n)} | ${fmt(load.rps)} | ${fmt(scriptCalls(loaded))} | **${fmt(scriptCalls(loaded) / n, 4)}** |`,
        `| two limits (a second and a month) | ${fmt(twoLimitLoad.requests)} | ${fmt(twoLimitLoad.rps)} | ${fmt(scriptCalls(twoLimits))} | **${fmt(scriptCalls(twoLimits) / twoLimitLoad.requests, 4)}** |`,
        `| one limit and a credit balance (never leased) | ${fmt(creditLoad.requests)} | ${fmt(creditLoad.rps)} | ${fmt(scriptCalls(credits))} | **${fmt(scriptCalls(credits) / creditLoad.requests, 4)}** |`,
        '',
        'A balance is never leased: every request of a key with credits is decided in Redis, in one script call with the requests of the same key that arrived in the same turn of the event loop (its limits and balances charged together). So its calls per request follow how many requests a turn carries, not the key count.',
        '',
        '| Postgres (database tollgate_bench) | under load | idle | net per 10,000 requests | net per second of load |',
        '|---|--:|--:|--:|--:|',
        pgRow('transactions committed (xact_commit)', pg0.commits, pg1.commits, pg2.commits),
        pgRow(
          'rows written (tup_inserted + tup_updated + tup_deleted)',
          pg0.writes,
          pg1.writes,
          pg2.writes,
          true,
        ),
        pgRow('rows fetched (tup_fetched)', pg0.reads, pg1.reads, pg2.reads),
        '',
        'Usage is written per key and endpoint once per flush, not per request: the writes follow the seconds of traffic, so per 10,000 requests they fall as the request rate rises.',
        '',
        `| ${fmt(SPREAD_KEYS)} keys, each seen once in ${SPREAD_SECONDS} s | requests | Postgres rows written in the minute (net of idle) | per key |`,
        '|---|--:|--:|--:|',
        `| one request per key, spread evenly | ${fmt(spread.requests)} | ${fmt(spread.writes - spreadIdle)} | ${fmt((spread.writes - spreadIdle) / SPREAD_KEYS, 1)} |`,
        '',
        'Each key seen in a flush costs its totals, its minute, hour, day and month buckets, its endpoint by day and by month, and its last use: the rows per minute follow the keys seen, not the requests.',
        '',
        await hotConsumerTable(run.redisUrl, databaseUrl),
      ].join('\n') + problemsNote([tg]);
    return body;
  } finally {
    redis.disconnect();
  }
}
