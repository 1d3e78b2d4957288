// `npm run bench -- events`: what webhooks and a billing export cost the proxy (docs/performance.md, "Events and exports configured and busy": within 5 %).
// One Tollgate in Redis mode (a private redis-server, a fresh Postgres database), one process for both
// states so they differ by their configuration alone: visits alternate between none configured and a
// webhook for every event type plus a CloudEvents export of every key's minutes, both sending to a
// receiver in the bench's process (up and back down each round: none, busy, busy, none). The same
// background work runs throughout: a key changed 20 times a second (20 events a second to deliver) and
// 200 keys with customer ids sending 100 requests a second (200 buckets a minute to export), while wrk
// loads one key whose plan has an hourly limit (so every request passes the quota-threshold check).
// Reported as req/s and CPU per request against none, with the deliveries and sends the receiver got,
// and the limiter's cost per decision with and without its notices, measured alone.
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type * as LimitNoticesModule from '../../src/limits/limit-notices.ts';
import type * as MemoryLimiterModule from '../../src/limits/memory-limiter.ts';
import type * as PlanModule from '../../src/plans/plan.ts';
import {
  CLIENT_CPUS,
  CPU_COUNT,
  DURATION,
  PIN,
  PORT,
  ROOT,
  ROOT_TOKEN,
  ROUNDS,
  TARGET_CPUS,
  WARMUP,
  env,
  log,
  positive,
  run,
} from '../lib/config.ts';
import { pinTree, treeCpuUs } from '../lib/processes.ts';
import { fmt, machine, median, problemsNote } from '../lib/report.ts';
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
import { wrk } from '../lib/wrk.ts';

const REQUEST_PATH = '/bench/item?id=42';
const SPREAD_KEYS = 200;
const SPREAD_PER_SECOND = 100;
const CHANGES_PER_SECOND = 20;
const EVENT_TYPES = [
  'key.created',
  'key.updated',
  'key.deleted',
  'key.rolled',
  'key.expiring',
  'consumer.created',
  'consumer.updated',
  'consumer.deleted',
  'quota.threshold',
  'credits.low',
  'credits.exhausted',
  'usage.exported',
];
const DECISIONS = 1_000_000;

/** A receiver for deliveries and export sends: answers 204 at once and counts what came. */
async function startReceiver(
  port: number,
): Promise<{ server: Server; received: { hooks: number; sends: number } }> {
  const received = { hooks: 0, sends: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/hooks') received.hooks++;
      else received.sends++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, received };
}

async function call(
  port: number,
  method: string,
  route: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${route}`, {
    method,
    headers: { authorization: `Bearer ${ROOT_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${route} → ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Every `1000 / perSecond` ms, `work(i)`, until stopped: counts the works done; a failure stops the bench. */
function every(
  perSecond: number,
  work: (i: number) => Promise<unknown>,
): { stop(): void; failed: () => unknown; done: () => number } {
  let i = 0;
  let done = 0;
  let failure: unknown;
  const timer = setInterval(() => {
    work(i++).then(
      () => done++,
      (err: unknown) => (failure ??= err),
    );
  }, 1000 / perSecond);
  return { stop: () => clearInterval(timer), failed: () => failure, done: () => done };
}

/** Nanoseconds per decision of the in-process limiter on a key with an hourly limit, without and with notices (the built modules). */
async function decisionCost(): Promise<{ without: number; with: number }> {
  const dist = (file: string) => path.join(ROOT, 'dist/src', file);
  const { MemoryRateLimiter } = (await import(
    dist('limits/memory-limiter.js')
  )) as typeof MemoryLimiterModule;
  const { LimitNotices } = (await import(dist('limits/limit-notices.js'))) as typeof LimitNoticesModule;
  const { planOf, ruleOf } = (await import(dist('plans/plan.js'))) as typeof PlanModule;
  const plan = planOf([ruleOf({ limit: 1_000_000_000_000, period: 'hour' })]);
  const subjects = [{ scope: 'key' as const, id: 'key_bench', plan }];
  const limiters = [new MemoryRateLimiter(), new MemoryRateLimiter({ notices: new LimitNotices() })];
  const fastest = [Infinity, Infinity];
  const now = Date.now();
  // Batch by batch, one limiter then the other, the first batch of each untimed: the JIT has seen both
  // shapes (a watch, none) before either is timed.
  for (let batch = 0; batch <= 9; batch++) {
    limiters.forEach((limiter, l) => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < DECISIONS; i++) limiter.consume(subjects, 1, now);
      const ns = Number(process.hrtime.bigint() - started) / DECISIONS;
      if (batch > 0) fastest[l] = Math.min(fastest[l]!, ns);
    });
  }
  for (const limiter of limiters) void limiter.close();
  return { without: fastest[0]!, with: fastest[1]! };
}

interface Sample {
  readonly rps: number;
  readonly cpuUs: number;
  readonly p99: number;
  /** Over the visit: changes made (each an event), deliveries and export sends the receiver got. */
  readonly changes: number;
  readonly hooks: number;
  readonly sends: number;
}

export async function events(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  run.redisUrl = await privateRedis(PIN ? CLIENT_CPUS : undefined);
  await flushRedis(run.redisUrl);
  const backend = await startBackend();
  if (PIN) pinTree(backend.child.pid, CLIENT_CPUS);
  const port = PORT.events;
  const receiverPort = PORT.events + 1;
  const { server, received } = await startReceiver(receiverPort);
  const proc = await startTollgate({
    name: 'events',
    port,
    mode: 'redis',
    databaseUrl: await freshDatabase(),
    redisUrl: run.redisUrl,
    // Exports look for closed minutes every second: the busiest schedule there is.
    extraEnv: { BILLING_EXPORT_RUN_SECONDS: '1', BILLING_EXPORT_SETTLE_SECONDS: '1' },
  });
  if (PIN) pinTree(proc.child.pid, TARGET_CPUS);
  const pid = proc.child.pid as number;
  await ensurePlan(port);
  const secret = await createKey(port, 'events-hot');
  const changed = await management(port, '/consumer-api-key/create', { name: 'events-changed' });
  const spread: string[] = [];
  for (let k = 0; k < SPREAD_KEYS; k++)
    spread.push(
      String(
        (await management(port, '/consumer-api-key/create', { name: `events-${k}`, externalId: `cus_${k}` }))
          .secret,
      ),
    );

  const background = [
    every(CHANGES_PER_SECOND, (i) =>
      call(port, 'PATCH', `/consumer-api-key/${String(changed.id)}`, { metadata: { change: i } }),
    ),
    every(SPREAD_PER_SECOND, async (i) => {
      const res = await fetch(`http://127.0.0.1:${port}${REQUEST_PATH}`, {
        headers: { authorization: `Bearer ${spread[i % SPREAD_KEYS]}` },
      });
      await res.arrayBuffer();
    }),
  ];
  let configured: { webhook: string; exportId: string } | undefined;
  const configure = async (busy: boolean) => {
    if (busy && configured === undefined) {
      const webhook = await call(port, 'POST', '/tollgate/webhooks', {
        url: `http://127.0.0.1:${receiverPort}/hooks`,
        events: EVENT_TYPES,
      });
      const exported = await call(port, 'POST', '/tollgate/billing-exports', {
        type: 'cloudevents',
        url: `http://127.0.0.1:${receiverPort}/events`,
        eventName: 'api_requests',
        interval: 'minute',
        subject: 'key',
      });
      configured = { webhook: String(webhook.id), exportId: String(exported.id) };
    } else if (!busy && configured !== undefined) {
      await call(port, 'DELETE', `/tollgate/webhooks/${configured.webhook}`);
      await call(port, 'DELETE', `/tollgate/billing-exports/${configured.exportId}`);
      configured = undefined;
    }
  };
  const load = (seconds: number) =>
    wrk({
      url: `http://127.0.0.1:${port}${REQUEST_PATH}`,
      seconds,
      headers: { authorization: `Bearer ${secret}` },
      ...(PIN && { cpus: CLIENT_CPUS }),
    });

  const STATES = [false, true];
  const rounds: Map<boolean, Sample[]>[] = [];
  try {
    await load(WARMUP);
    for (let round = 0; round < ROUNDS; round++) {
      const samples = new Map<boolean, Sample[]>(STATES.map((s) => [s, []]));
      for (const busy of [false, true, true, false]) {
        await configure(busy);
        await load(1);
        const failure = background.map((b) => b.failed()).find((f) => f !== undefined);
        if (failure !== undefined) throw failure;
        const cpu0 = treeCpuUs(pid);
        const got0 = { ...received };
        const changes0 = background[0]!.done();
        const r = await load(DURATION);
        if (r.non2xx > 0 || r.socketErrors > 0)
          throw new Error(`${r.non2xx} non-2xx answers, ${r.socketErrors} socket errors`);
        const sample = {
          rps: r.rps,
          cpuUs: (treeCpuUs(pid) - cpu0) / r.requests,
          p99: r.p99,
          changes: background[0]!.done() - changes0,
          hooks: received.hooks - got0.hooks,
          sends: received.sends - got0.sends,
        };
        samples.get(busy)!.push(sample);
        log(
          `round ${round + 1}/${ROUNDS} ${busy ? 'busy' : 'none'}: ${fmt(r.rps)} req/s, ${fmt(sample.cpuUs, 1)} µs CPU per request, ${sample.changes} changes, ${sample.hooks} deliveries, ${sample.sends} export sends`,
        );
      }
      rounds.push(samples);
    }
  } finally {
    for (const b of background) b.stop();
    server.close();
  }

  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const of = (round: Map<boolean, Sample[]>, s: boolean, pick: (x: Sample) => number) =>
    mean(round.get(s)!.map(pick));
  const all = (s: boolean, pick: (x: Sample) => number) =>
    median(rounds.flatMap((round) => round.get(s)!.map(pick)));
  /** Per second (per minute for export sends, which come in a burst as each minute closes) over every visit of a state. */
  const rate = (s: boolean, pick: (x: Sample) => number, perMs: number) =>
    (rounds.reduce((n, round) => n + round.get(s)!.reduce((m, x) => m + pick(x), 0), 0) * perMs) /
    (rounds.length * 2 * DURATION * 1000);
  // Each round's ratio to none in the same round, then the median over the rounds.
  const ratio = (s: boolean, pick: (x: Sample) => number) =>
    median(rounds.map((round) => of(round, s, pick) / of(round, false, pick)));
  const rows = STATES.map(
    (s) =>
      `| ${s ? 'a webhook for every event type and a minute export, both busy' : 'none'} | ${fmt(all(s, (x) => x.rps))} | ${ratio(s, (x) => x.rps).toFixed(3)} | ${fmt(
        all(s, (x) => x.cpuUs),
        1,
      )} | ${ratio(s, (x) => x.cpuUs).toFixed(3)} | ${fmt(
        all(s, (x) => x.p99),
        2,
      )} | ${fmt(
        rate(s, (x) => x.changes, 1_000),
        1,
      )} | ${fmt(
        rate(s, (x) => x.hooks, 1_000),
        1,
      )} | ${fmt(rate(s, (x) => x.sends, 60_000))} | ${rounds
        .map((round) =>
          round
            .get(s)!
            .map((x) => fmt(x.rps))
            .join(', '),
        )
        .join(' / ')} |`,
  );
  const decisions = await decisionCost();
  return (
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- events\`: one Tollgate in Redis mode (a private redis-server, a fresh Postgres database), \`GET ${REQUEST_PATH}\` with a key whose plan has an hourly limit (never reached) to the nginx backend. Throughout, in the background: one key changed ${CHANGES_PER_SECOND} times a second and ${SPREAD_KEYS} keys with customer ids sending ${SPREAD_PER_SECOND} requests a second. Busy: a webhook subscribed to every event type and a CloudEvents export of every key's minutes (runs every second, minutes closed 1 s after their end), both to a receiver answering 204 at once. wrk -c${positive(env.BENCH_CONNECTIONS, 50)}; ${ROUNDS} rounds, each visiting none, busy, busy, none, ${DURATION} s per visit after a 1 s warm-up${PIN ? `; the target on CPU ${TARGET_CPUS}, wrk, nginx and Redis on CPU ${CLIENT_CPUS}` : ` (${CPU_COUNT} CPUs shared)`}. Values are medians of the visits; the ratios are medians over the rounds of each round's ratio to none; events, deliveries and sends are totals over the visits of a state. CPU is the process's user + system time over the requests wrk completed.`,
      '',
      machine(),
      '',
      '| configured | req/s | × none | CPU µs per request | × none | p99 ms | events made/s | deliveries/s | export sends/min | req/s per visit, by round |',
      '|---|--:|--:|--:|--:|--:|--:|--:|--:|---|',
      ...rows,
      '',
      `The limiter alone (the built \`MemoryRateLimiter\` in the bench's own process, one key with an hourly limit; the fastest of 9 batches of ${fmt(DECISIONS)} decisions each, the two limiters' batches taken in turn): ${fmt(decisions.without, 1)} ns per decision without notices, ${fmt(decisions.with, 1)} ns with them (the quota-threshold check of every admitted request).`,
    ].join('\n') + problemsNote([proc])
  );
}
