// `npm run bench -- routes`: the hot-path cost of the route table and of route-aware plans. One
// embedded Tollgate with a key of one limit, measured with no route (the catch-all) and with tables of
// 1, 100 and 1,000 routes through which the request is routed; then, on the largest table, a second
// key whose plan's limit has a match and whose plan has costs (decision record 0034). One process for
// every row, so they differ by their table and plan alone (two processes of the same build differ by
// more than a table: their heaps, their JIT); the rows are visited up and back down (0, 1, 100, 1000,
// plan, plan, 1000, 100, 1, 0) each round, so drift on a shared machine falls on all of them alike.
// Reported as req/s and CPU per request against no route (docs/performance.md, "Route tables and route-aware plans": within 10 %).
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as RouteIndexModule from '../../src/routes/route-index.ts';
import type { RouteMatch } from '../../src/plans/route.ts';
import {
  BACKEND_URL,
  CLIENT_CPUS,
  DURATION,
  HUGE_LIMIT,
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
} from '../lib/config.ts';
import { pinTree, treeCpuUs, treeRssKiB } from '../lib/processes.ts';
import { fmt, machine, median, problemsNote } from '../lib/report.ts';
import {
  buildTollgate,
  createKey,
  ensurePlan,
  ensureTools,
  management,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

/** Route table sizes to measure besides none (BENCH_ROUTE_TABLES, default 1,100,1000). */
const TABLES = (env.BENCH_ROUTE_TABLES ?? '1,100,1000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const SIZES = [0, ...TABLES];
/** The row of the key with a route-aware plan, on the largest table. */
const PLAN = 'plan';
type Row = number | typeof PLAN;
const ROWS: Row[] = [...SIZES, PLAN];
const REQUEST_PATH = '/bench/item?id=42';
/**
 * A plan of one limit that counts only GETs of route `bench`, and costs: the request walks past a
 * cost for another route and takes the second, 2 units (both never refuse).
 */
const ROUTE_AWARE_PLAN = {
  rateLimitId: 'bench-route-aware',
  description: 'bench: a limit with a match, and costs; never triggers',
  limits: [
    {
      name: 'bench-gets',
      limit: HUGE_LIMIT,
      period: 'hour',
      match: { routeIds: ['bench'], methods: ['GET'] },
    },
  ],
  costs: [
    { match: { routeIds: ['r1'] }, cost: 5 },
    { match: { routeIds: ['bench'], pathPrefix: '/bench/item' }, cost: 2 },
  ],
};
/** A change of the table is in force within this (docs/guides/routes.md: 1 s on every replica). */
const IN_FORCE_MS = 1_000;
const MATCH_CALLS = 1_000_000;

/**
 * Route `i` of the tables: route 0 (`bench`, `/bench`) takes the bench's request; the others make it
 * walk past every kind of route: siblings under /bench (its path segment is looked up among them),
 * exact hosts, and wildcard hosts (its host is looked up under each of its suffixes). The table of size
 * n is routes 0 to n-1; all go to the bench backend.
 */
function route(i: number): {
  routeId: string;
  match: Partial<RouteMatch>;
  upstreamUrl: string;
  stripPrefix?: boolean;
} {
  if (i === 0) return { routeId: 'bench', match: { pathPrefix: '/bench' }, upstreamUrl: BACKEND_URL };
  const match = [
    { pathPrefix: `/bench/r${i}` },
    { host: `h${i}.example.com`, pathPrefix: `/svc${i}/v1` },
    { host: `*.w${i}.example.com`, pathPrefix: '/bench' },
  ][i % 3]!;
  return { routeId: `r${i}`, match, upstreamUrl: BACKEND_URL, ...(i % 2 === 0 && { stripPrefix: true }) };
}

/** A row's name in the log and the table. */
function label(row: Row): string {
  if (row === PLAN) return `${fmt(SIZES.at(-1)!)} routes, a plan with a match and costs`;
  return row === 0 ? 'no route (UPSTREAM_URL)' : `${fmt(row)} route${row === 1 ? '' : 's'}`;
}

/** Eight at a time, as an operator's script would. */
async function pooled(count: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/** Grows or shrinks the table from `from` routes to `to` through the management API, and waits until it is in force. */
async function resize(port: number, from: number, to: number): Promise<void> {
  if (to > from) await pooled(to - from, (i) => management(port, '/tollgate/routes', route(from + i)));
  if (to < from) {
    await pooled(from - to, async (i) => {
      const res = await fetch(`http://127.0.0.1:${port}/tollgate/routes/${route(to + i).routeId}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${ROOT_TOKEN}` },
      });
      if (res.status !== 200) throw new Error(`DELETE route → ${res.status} ${await res.text()}`);
    });
  }
  await sleep(IN_FORCE_MS);
}

/** Nanoseconds per match of the bench's request in each table size, on the built index. */
async function matchCost(): Promise<[number, number][]> {
  // The built module: the bench runs TypeScript by stripping types, which leaves src's `.js` imports unresolved.
  const { buildRouteIndex } = (await import(
    path.join(ROOT, 'dist/src/routes/route-index.js')
  )) as typeof RouteIndexModule;
  return SIZES.map((size) => {
    const routes = Array.from({ length: size }, (_, i) => route(i));
    const index = buildRouteIndex(
      routes.map((r) => ({
        match: { host: null, methods: null, caseInsensitive: false, ...r.match } as RouteMatch,
        value: r.routeId,
      })),
      'catch-all',
    );
    let best = Infinity;
    for (let batch = 0; batch < 9; batch++) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < MATCH_CALLS; i++) index.match(`127.0.0.1:${PORT.routes}`, 'GET', '/bench/item');
      best = Math.min(best, Number(process.hrtime.bigint() - started) / MATCH_CALLS);
    }
    return [size, best];
  });
}

interface Sample {
  readonly rps: number;
  readonly cpuUs: number;
  readonly p99: number;
}

export async function routes(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const backend = await startBackend();
  if (PIN) pinTree(backend.child.pid, CLIENT_CPUS);
  const port = PORT.routes;
  const proc = await startTollgate({ name: 'routes', port, mode: 'embedded' });
  if (PIN) pinTree(proc.child.pid, TARGET_CPUS);
  const pid = proc.child.pid as number;
  await ensurePlan(port);
  const secrets = new Map<Row, string>([[0, await createKey(port, 'routes')]]);
  const largest = SIZES.at(-1)!;
  const load = (seconds: number, row: Row) =>
    wrk({
      url: `http://127.0.0.1:${port}${REQUEST_PATH}`,
      seconds,
      headers: { authorization: `Bearer ${secrets.get(row === PLAN ? PLAN : 0)}` },
      ...(PIN && { cpus: CLIENT_CPUS }),
    });
  await load(WARMUP, 0);

  /** Per round, per row: its samples (two: on the way up and on the way down). */
  const rounds: Map<Row, Sample[]>[] = [];
  const rss = new Map<Row, number>();
  let size = 0;
  let previous: Row = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const samples = new Map<Row, Sample[]>(ROWS.map((s) => [s, []]));
    for (const row of [...ROWS, ...[...ROWS].reverse()]) {
      const next = row === PLAN ? largest : row;
      if (next !== size) {
        log(`round ${round + 1}/${ROUNDS}: ${fmt(size)} → ${fmt(next)} routes`);
        await resize(port, size, next);
        size = next;
      }
      // The plan names routes of the table: created once they exist.
      if (row === PLAN && !secrets.has(PLAN)) {
        await management(port, '/rate-limit/create', ROUTE_AWARE_PLAN, [201, 409]);
        secrets.set(PLAN, await createKey(port, 'route-aware', true, ROUTE_AWARE_PLAN.rateLimitId));
      }
      // The JIT settles on the new table, or the other key, before it is measured.
      if (row !== previous) await load(1, row);
      previous = row;
      const cpu0 = treeCpuUs(pid);
      const r = await load(DURATION, row);
      if (r.non2xx > 0 || r.socketErrors > 0)
        throw new Error(`${label(row)}: ${r.non2xx} non-2xx answers, ${r.socketErrors} socket errors`);
      samples.get(row)!.push({ rps: r.rps, cpuUs: (treeCpuUs(pid) - cpu0) / r.requests, p99: r.p99 });
      rss.set(row, treeRssKiB(pid));
      log(
        `round ${round + 1}/${ROUNDS} ${label(row)}: ${fmt(r.rps)} req/s, ${fmt(samples.get(row)!.at(-1)!.cpuUs, 1)} µs CPU per request`,
      );
    }
    rounds.push(samples);
  }

  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const of = (round: Map<Row, Sample[]>, s: Row, pick: (x: Sample) => number) =>
    mean(round.get(s)!.map(pick));
  const all = (s: Row, pick: (x: Sample) => number) =>
    median(rounds.flatMap((round) => round.get(s)!.map(pick)));
  // Each round's ratio to no route in the same round, then the median over the rounds.
  const ratio = (s: Row, pick: (x: Sample) => number) =>
    median(rounds.map((round) => of(round, s, pick) / of(round, 0, pick)));
  const rows = ROWS.map(
    (s) =>
      `| ${label(s)} | ${fmt(all(s, (x) => x.rps))} | ${ratio(s, (x) => x.rps).toFixed(3)} | ${fmt(
        all(s, (x) => x.cpuUs),
        1,
      )} | ${ratio(s, (x) => x.cpuUs).toFixed(3)} | ${fmt(
        all(s, (x) => x.p99),
        2,
      )} | ${fmt(rss.get(s)! / 1024)} | ${rounds
        .map((round) =>
          round
            .get(s)!
            .map((x) => fmt(x.rps))
            .join(', '),
        )
        .join(' / ')} |`,
  );
  const matching = await matchCost();
  return (
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- routes\`: one embedded Tollgate with a key of one limit (never reached), \`GET ${REQUEST_PATH}\` to the nginx backend; with routes, the request takes route \`bench\` out of a table that also holds sibling prefixes, exact hosts and wildcard hosts; the last row is another key of the same process on the ${fmt(largest)}-route table, its plan's one limit matching GETs of route \`bench\` and its costs giving the request 2 units after passing a cost for another route. wrk -c${positive(env.BENCH_CONNECTIONS, 50)}; ${ROUNDS} rounds, each visiting the rows up and back down (${[...ROWS, ...[...ROWS].reverse()].join(', ')}), ${DURATION} s per visit after a 1 s warm-up on each new table${PIN ? `; the target on CPU ${TARGET_CPUS}, wrk and nginx on CPU ${CLIENT_CPUS}` : ''}. Values are medians of the visits; the ratios are medians over the rounds of each round's ratio to no route. CPU is the process's user + system time over the requests wrk completed.`,
      '',
      machine(),
      '',
      '| route table, key | req/s | × no route | CPU µs per request | × no route | p99 ms | RSS MiB | req/s per visit, by round |',
      '|---|--:|--:|--:|--:|--:|--:|---|',
      ...rows,
      '',
      `The match alone (the built \`buildRouteIndex\`, in the bench's own process, the same tables and request; the fastest of 9 batches of ${fmt(MATCH_CALLS)} calls):`,
      '',
      '| route table | ns per match |',
      '|---|--:|',
      ...matching.map(([s, ns]) => `| ${fmt(s)} route${s === 1 ? '' : 's'} | ${fmt(ns, 1)} |`),
    ].join('\n') + problemsNote([proc])
  );
}
