// `npm run bench -- buckets`: a hot key on a token bucket and on a concurrency limit against the one-limit
// key, in one Tollgate process (Redis mode + Postgres, a private redis-server), in alternating rounds:
// req/s, p99 and the limiter's Redis round trips per request (docs/decisions/0095, 0096). Every plan is
// too large to refuse (the bucket's refill and burst huge, the concurrency limit above wrk's
// connections), so every request is decided and none refused. The bucket is leased (0208), the
// concurrency limit's places pooled on the replica (0209). Round trips are the process's own count
// (tollgate_redis_command_duration_seconds_count by operation: `consume` decides, `release` gives a
// place back, `renew` is the heartbeat), so the usage pushes the same Redis serves are not mistaken
// for them.
import { CONNECTIONS, DURATION, HUGE_LIMIT, PLAN_ID, PORT, ROUNDS, WARMUP, log, run } from '../lib/config.ts';
import { stopProc } from '../lib/processes.ts';
import { fmt, median, problemsNote, ratio } from '../lib/report.ts';
import {
  buildTollgate,
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

const OPERATIONS = ['consume', 'release', 'renew'] as const;
type Operation = (typeof OPERATIONS)[number];

/** The process's Redis round trips so far, by limiter operation (its ops listener's /metrics). */
async function roundTrips(port: number): Promise<Record<Operation, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port + PORT.opsOffset}/metrics`)).text();
  const count = (operation: Operation) => {
    const name = `tollgate_redis_command_duration_seconds_count{operation="${operation}"} `;
    const line = text.split('\n').find((l) => l.startsWith(name));
    return line === undefined ? 0 : Number(line.slice(name.length));
  };
  return { consume: count('consume'), release: count('release'), renew: count('renew') };
}

interface Row {
  readonly label: string;
  readonly secret: string;
  readonly rounds: WrkResult[];
  readonly trips: Record<Operation, number>;
}

export async function buckets(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  run.redisUrl = await privateRedis();
  await flushRedis(run.redisUrl);
  await startBackend();
  const databaseUrl = await freshDatabase();
  const port = PORT.tollgateRedis;
  const tg = await startTollgate({
    name: 'buckets',
    port,
    mode: 'redis',
    databaseUrl,
    redisUrl: run.redisUrl,
  });
  try {
    await ensurePlan(port);
    for (const [rateLimitId, limits] of [
      [
        'bench-bucket',
        [{ limit: HUGE_LIMIT / 1_000, period: 'second', algorithm: 'tokenBucket', burst: HUGE_LIMIT }],
      ],
      ['bench-concurrency', [{ limit: 10 * CONNECTIONS, algorithm: 'concurrency' }]],
    ] as const)
      await management(port, '/rate-limit/create', { rateLimitId, limits }, [201, 409]);
    const rows: Row[] = [
      { label: 'one limit (an hour), leased', secret: await createKey(port, 'one-limit', true, PLAN_ID) },
      {
        label: 'a token bucket, leased',
        secret: await createKey(port, 'bucket', true, 'bench-bucket'),
      },
      {
        label: 'a concurrency limit, its places pooled',
        secret: await createKey(port, 'concurrency', true, 'bench-concurrency'),
      },
    ].map((r) => ({ ...r, rounds: [], trips: { consume: 0, release: 0, renew: 0 } }));
    const url = `http://127.0.0.1:${port}/bench/item?id=42`;
    for (const row of rows)
      await wrk({ url, seconds: WARMUP, headers: { authorization: `Bearer ${row.secret}` } });
    for (let round = 0; round < ROUNDS; round++)
      for (const row of rows) {
        log(`buckets, round ${round + 1}: ${row.label}`);
        const before = await roundTrips(port);
        row.rounds.push(
          await wrk({ url, seconds: DURATION, headers: { authorization: `Bearer ${row.secret}` } }),
        );
        const after = await roundTrips(port);
        for (const op of OPERATIONS) row.trips[op] += after[op] - before[op];
      }
    const base = median(rows[0]!.rounds.map((r) => r.rps));
    return (
      [
        `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- buckets\` (one Tollgate process, Redis mode + Postgres, a private redis-server; wrk -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s after a ${WARMUP} s warm-up each; medians of the rounds; round trips summed over the rounds).`,
        '',
        '| the key’s plan | req/s | ÷ one-limit key | p99 ms | req/s per round | non-2xx | consume calls per request | release calls per request | renew calls | Redis round trips per request |',
        '|---|--:|--:|--:|---|--:|--:|--:|--:|--:|',
        ...rows.map((row) => {
          const rps = median(row.rounds.map((r) => r.rps));
          const requests = row.rounds.reduce((n, r) => n + r.requests, 0);
          const per = (n: number) => fmt(n / requests, 4);
          return `| ${row.label} | ${fmt(rps)} | ${ratio(rps, base)} | ${fmt(median(row.rounds.map((r) => r.p99)), 2)} | ${row.rounds.map((r) => fmt(r.rps)).join(' / ')} | ${fmt(row.rounds.reduce((n, r) => n + r.non2xx + r.socketErrors, 0))} | ${per(row.trips.consume)} | ${per(row.trips.release)} | ${fmt(row.trips.renew)} | **${per(row.trips.consume + row.trips.release)}** |`;
        }),
      ].join('\n') + problemsNote([tg])
    );
  } finally {
    await stopProc(tg);
  }
}
