// `npm run bench -- hot-consumer` (also the last table of `cost`): Redis round trips per request of a hot
// consumer whose traffic is spread over its 10 keys and 2 replicas (issue 25: at most 0.05). The
// store has no consumers yet, so this drives the limiter itself (the built one, dist/), two instances
// with their own command and subscriber connections as two replicas run them.
import path from 'node:path';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type * as Connect from '../../src/redis/connect.ts';
import type * as Limiter from '../../src/limits/redis-limiter.ts';
import type * as Plans from '../../src/plans/plan.ts';
import type { Balance } from '../../src/plans/balance.ts';
import type { Subject } from '../../src/plans/subject.ts';
import type * as Logs from '../../src/ops/logger.ts';
import type * as Metric from '../../src/ops/metrics.ts';
import { DURATION, ROOT, env, log, run } from '../lib/config.ts';
import { fmt } from '../lib/report.ts';
import { buildTollgate, commandStats, flushRedis, privateRedis } from '../lib/services.ts';

const KEYS = 10;
const REPLICAS = 2;
/** Requests in flight per replica: one turn's worth, the next turn once they are answered. */
const PER_TURN = 25;
/** Paced rows, total requests per second over both replicas: the proxy's rate in Redis mode on this machine, and a quarter of it. */
const RATES = (env.BENCH_CONSUMER_RATES ?? '16000,4000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);

const load = <T>(file: string): Promise<T> => import(path.join(ROOT, 'dist/src', file)) as Promise<T>;

interface Row {
  readonly shape: string;
  readonly rate: string;
  readonly requests: number;
  readonly rps: number;
  readonly calls: number;
}

async function scriptCalls(redis: Redis): Promise<number> {
  const stats = await commandStats(redis);
  return (stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0);
}

/** The table, against the Redis at `redisUrl` (flushed first). */
export async function hotConsumerTable(redisUrl: string): Promise<string> {
  const { connectRedis } = await load<typeof Connect>('redis/connect.js');
  const { RedisRateLimiter } = await load<typeof Limiter>('limits/redis-limiter.js');
  const { planOf, ruleOf } = await load<typeof Plans>('plans/plan.js');
  const { createLogger } = await load<typeof Logs>('ops/logger.js');
  const { Metrics } = await load<typeof Metric>('ops/metrics.js');
  await flushRedis(redisUrl);
  const redis = new Redis(redisUrl);
  const replicas = await Promise.all(
    Array.from({ length: REPLICAS }, async () => {
      const connections = connectRedis({ redisUrl, redisClusterNodes: undefined }, createLogger('silent'));
      await connections.ready(5_000);
      const limiter = new RedisRateLimiter(connections.client, 'hot:', new Metrics(), {
        subscriber: connections.subscriber,
      });
      await limiter.ready();
      return { connections, limiter };
    }),
  );
  const huge = planOf([ruleOf({ limit: 1_000_000_000_000, period: 'hour' })]);
  // A balance too large to run out: never leased, so each turn's requests go to Redis in one call.
  const credits: Balance = { epoch: 1, window: 0, granted: 1e15, floor: 0, refill: null, lowAt: null };
  const shapes: [string, Plans.Plan, Balance?][] = [
    ['the consumer’s plan alone', planOf([])],
    ['a plan on each key and on the consumer', planOf([ruleOf({ limit: 1_000_000_000_000, period: 'day' })])],
    ['the consumer’s plan and a credit balance', planOf([]), credits],
  ];
  const rows: Row[] = [];
  try {
    for (const [shape, keyPlan, balance] of shapes) {
      const consumer: Subject = {
        scope: 'consumer',
        id: `con_${rows.length}`,
        plan: huge,
        ...(balance && { balance }),
      };
      const keys = Array.from({ length: KEYS }, (_, k): Subject[] => [
        { scope: 'key', id: `key_${rows.length}_${k}`, plan: keyPlan },
        consumer,
      ]);
      for (const rate of [undefined, ...RATES]) {
        const label = rate === undefined ? 'as fast as the limiter goes' : `${fmt(rate)} req/s`;
        log(`hot consumer, ${shape}, ${label}`);
        const before = await scriptCalls(redis);
        const started = performance.now();
        const requests = await Promise.all(
          replicas.map(async ({ limiter }, n) => {
            let sent = 0;
            for (let turn = 0; performance.now() - started < DURATION * 1_000; turn++) {
              const decisions = Array.from({ length: PER_TURN }, (_, i) =>
                limiter.consume(keys[(sent + i + n) % KEYS]!, 1, Date.now()),
              );
              sent += PER_TURN;
              await Promise.all(decisions);
              // Paced: each replica carries half the rate; otherwise the next turn of the event loop.
              const due =
                rate === undefined ? 0 : started + (sent * 1_000 * REPLICAS) / rate - performance.now();
              await (due > 0 ? sleep(due) : nextTurn());
            }
            return sent;
          }),
        );
        const seconds = (performance.now() - started) / 1_000;
        const total = requests.reduce((a, b) => a + b, 0);
        rows.push({
          shape,
          rate: label,
          requests: total,
          rps: total / seconds,
          calls: (await scriptCalls(redis)) - before,
        });
      }
    }
  } finally {
    for (const { connections, limiter } of replicas) {
      await limiter.close();
      await connections.close();
    }
    redis.disconnect();
  }
  return [
    `Hot consumer: one consumer, ${KEYS} keys, ${REPLICAS} limiter instances with their own connections (two replicas' limiters in one process), ${PER_TURN} requests in flight each, ${DURATION} s per row, requests spread over every key and replica. Limiter round trips are its script calls (\`evalsha\` + \`eval\` from \`INFO commandstats\`); the limiter makes no other call on a request's path.`,
    '',
    '| plans | load | requests | req/s | limiter round trips | per request |',
    '|---|---|--:|--:|--:|--:|',
    ...rows.map(
      (r) =>
        `| ${r.shape} | ${r.rate} | ${fmt(r.requests)} | ${fmt(r.rps)} | ${fmt(r.calls)} | **${fmt(r.calls / r.requests, 4)}** |`,
    ),
  ].join('\n');
}

export async function hotConsumer(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  run.redisUrl = await privateRedis();
  return hotConsumerTable(run.redisUrl);
}
