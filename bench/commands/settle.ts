// `npm run bench -- settle`: what settling a request from its response costs (docs/guides/usage-priced-apis.md).
// 1. A settled JSON request against a fixed-cost one, same route, same backend answer, and both again
//    answered in gzip (the settled one read decoded), one Tollgate per mode (embedded; Redis mode +
//    Postgres on a private redis-server): req/s in alternating rounds, medians and every round,
//    Tollgate's CPU time per request during each load, and Redis commands per request during each
//    Redis-mode load.
// 2. A stream of BENCH_SETTLE_EVENTS (200) events (bench/peers/sse-backend.ts, the last one carrying the
//    usage) through Tollgate in Redis mode, settled by the `openai` preset and at a fixed cost (each
//    through a replica of its own), against the bare forwarder (bench/peers/engine.ts), and settled
//    embedded: time to the first event and to the last byte, medians over BENCH_SETTLE_STREAMS streams
//    of each a round (one at a time, interleaved: each process serves every fourth stream), after
//    BENCH_SETTLE_WARM_STREAMS (2,000) streams of each target, the targets in turn as in the timed rounds
//    (warmed one after another, the last came out ahead; the longer warm-up V8 needs to compile
//    Tollgate's request path with its top tier moved none of these ratios: docs/performance.md); beside
//    them, each Tollgate's own mean time from a stream's arrival to its forwarding over the timed
//    streams (its tollgate_proxy_overhead_seconds): how much of the first event's lead is Tollgate's way
//    in.
//    Each round's timed streams are followed by as many of the same streams paced (their backend waits
//    after the first event, bench/peers/sse-backend.ts): the first event alone, without the other
//    events of its stream taking, on a machine of few CPUs, the CPU its client needs to read it.
// 3. Tollgate's heap in use and resident memory over BENCH_SETTLE_MEMORY_STREAMS (10,000) such streams,
//    20 at a time, read after a full collection every tenth of the way.
// BENCH_SETTLE_STREAMS_ONLY=1 runs 2 and 3 alone.
import { Redis } from 'ioredis';
import { request } from 'undici';
import {
  BACKEND_URL,
  HUGE_LIMIT,
  NODE,
  PEER_SECRET,
  PORT,
  ROUNDS,
  WARMUP,
  env,
  log,
  positive,
  run,
} from '../lib/config.ts';
import { alternatingRounds, roundsTable } from '../lib/alternating-rounds.ts';
import { fmt, machine, median, ratio } from '../lib/report.ts';
import { metricValue } from '../lib/metrics.ts';
import { httpOk, startProc, stopProc, treeCpuUs, treeRssKiB, waitFor } from '../lib/processes.ts';
import {
  buildTollgate,
  commandStats,
  createKey,
  ensureTools,
  flushRedis,
  freshDatabase,
  management,
  privateRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';
import { Inspector } from '../lib/inspector.ts';

const EVENTS = positive(env.BENCH_SETTLE_EVENTS, 200);
const STREAMS = positive(env.BENCH_SETTLE_STREAMS, 100);
const MEMORY_STREAMS = positive(env.BENCH_SETTLE_MEMORY_STREAMS, 10_000);
const WARM_STREAMS = positive(env.BENCH_SETTLE_WARM_STREAMS, 2_000);
const UNITS = 7;
const SSE_PORT = PORT.events + 5;
const FORWARDER_PORT = PORT.events + 6;
const INSPECTOR_PORT = PORT.events + 7;
const EMBEDDED_STREAMS_PORT = PORT.events + 8;
const FIXED_STREAMS_PORT = PORT.events + 9;

/** Two plans alike but for how a request to `/bench` is priced: 7 units before, or what its answer reports. */
export async function createSettlePlans(port: number): Promise<void> {
  const limits = [{ limit: HUGE_LIMIT, period: 'minute' }];
  const match = { pathPrefix: '/bench' };
  await management(port, '/rate-limit/create', {
    rateLimitId: 'bench-fixed-cost',
    unit: 'tokens',
    limits,
    costs: [{ match, cost: UNITS }],
  });
  await management(port, '/rate-limit/create', {
    rateLimitId: 'bench-settled',
    unit: 'tokens',
    limits,
    costs: [{ match, cost: 10, settle: { preset: 'openai' } }],
  });
}

/**
 * The answers a Tollgate read and found no units in; those wrk cuts short as a load ends (`cut-short`)
 * are not its meter's doing.
 */
async function unreadAnswers(opsPort: number): Promise<number> {
  let unread = 0;
  for (const reason of ['malformed', 'not-reported', 'too-large']) {
    const n = await metricValue(opsPort, `tollgate_unsettled_requests_total{reason="${reason}"}`);
    if (!Number.isNaN(n)) unread += n;
  }
  return unread;
}

/** Each JSON load: the plan its key is on, and its name. */
const LOADS = [
  ['fixed-cost', 'fixed-cost'],
  ['settled', 'settled'],
  ['fixed-cost', 'fixed-cost-gzip'],
  ['settled', 'settled-gzip'],
] as const;

async function jsonLoads(): Promise<string[]> {
  await startBackend();
  run.redisUrl = await privateRedis();
  await flushRedis(run.redisUrl);
  const redis = new Redis(run.redisUrl);
  const perRequest = new Map<string, Map<string, number>>();
  // Tollgate's CPU µs per request of every load, its warm-up first: what a settled request costs the
  // process, beside req/s, which the machine's other work moves as much.
  const cpu = new Map<string, number[]>();
  const loads: Record<string, (seconds: number) => Promise<WrkResult>> = {};
  try {
    for (const mode of ['embedded', 'redis'] as const) {
      const port = mode === 'embedded' ? PORT.tollgateEmbedded : PORT.tollgateRedis;
      const tollgate = await startTollgate({
        name: `settle-${mode}`,
        port,
        mode,
        ...(mode === 'redis' && { databaseUrl: await freshDatabase(), redisUrl: run.redisUrl }),
      });
      await createSettlePlans(port);
      const opsPort = port + PORT.opsOffset;
      for (const [plan, load] of LOADS) {
        const secret = await createKey(port, `${mode}-${load}`, true, `bench-${plan}`);
        const id = `${mode}-${load}`;
        cpu.set(id, []);
        loads[id] = async (seconds) => {
          const before = mode === 'redis' ? await commandStats(redis) : undefined;
          const unreadBefore = await unreadAnswers(opsPort);
          const cpuBefore = treeCpuUs(tollgate.child.pid!);
          const coded = load.endsWith('-gzip');
          const result = await wrk({
            url: `http://127.0.0.1:${port}/bench/${coded ? 'usage-gzip' : 'usage'}`,
            seconds,
            headers: { authorization: `Bearer ${secret}`, ...(coded && { 'accept-encoding': 'gzip' }) },
          });
          cpu.get(id)!.push((treeCpuUs(tollgate.child.pid!) - cpuBefore) / result.requests);
          // A load whose answers went unread would time a Tollgate that skipped the work.
          const unread = (await unreadAnswers(opsPort)) - unreadBefore;
          if (unread > 0) throw new Error(`${id}: ${unread} answers read as reporting nothing`);
          if (before !== undefined) {
            const calls = new Map<string, number>();
            for (const [command, n] of await commandStats(redis)) {
              const made = n - (before.get(command) ?? 0);
              if (made > 0) calls.set(command, made / result.requests);
            }
            perRequest.set(id, calls);
          }
          return result;
        };
      }
    }
    const rounds = await alternatingRounds(loads);
    const label: Record<string, string> = {
      'embedded-fixed-cost': 'embedded, fixed cost (7)',
      'embedded-settled': 'embedded, settled (reserves 10, answer says 7)',
      'embedded-fixed-cost-gzip': 'embedded, fixed cost, the answer in gzip',
      'embedded-settled-gzip': 'embedded, settled, the answer in gzip (read decoded)',
      'redis-fixed-cost': 'Redis mode, fixed cost (7)',
      'redis-settled': 'Redis mode, settled (reserves 10, answer says 7)',
      'redis-fixed-cost-gzip': 'Redis mode, fixed cost, the answer in gzip',
      'redis-settled-gzip': 'Redis mode, settled, the answer in gzip (read decoded)',
    };
    const byMode = (mode: string) =>
      new Map([...rounds].filter(([id]) => id.startsWith(mode))) as Map<string, WrkResult[]>;
    return [
      ...roundsTable(byMode('embedded'), label, 'embedded-fixed-cost'),
      '',
      ...roundsTable(byMode('redis'), label, 'redis-fixed-cost'),
      '',
      "Tollgate's CPU µs per request during each load, median (every round):",
      '',
      ...[...cpu].map(([id, [, ...measured]]) => {
        const us = measured.map((x) => fmt(x, 1)).join(' / ');
        return `- ${label[id]}: ${fmt(median(measured), 1)} (${us})`;
      }),
      '',
      'Redis commands per request, in the last round of each Redis-mode load:',
      '',
      ...[...perRequest].map(
        ([id, calls]) =>
          `- ${label[id]}: ${fmt(
            [...calls.values()].reduce((a, b) => a + b, 0),
            4,
          )} (${[...calls].map(([command, n]) => `${command} ${fmt(n, 4)}`).join(', ')})`,
      ),
    ];
  } finally {
    redis.disconnect();
  }
}

/** One stream: ms to the first event, ms to its last byte. */
async function oneStream(url: string, secret: string): Promise<[number, number]> {
  const started = performance.now();
  const { statusCode, body } = await request(url, { headers: { authorization: `Bearer ${secret}` } });
  if (statusCode !== 200) throw new Error(`stream answered ${statusCode}`);
  let first = NaN;
  for await (const chunk of body) {
    if (Number.isNaN(first) && (chunk as Buffer).includes('data:')) first = performance.now() - started;
  }
  return [first, performance.now() - started];
}

async function streams(): Promise<string[]> {
  const sse = startProc('settle-sse-backend', NODE, ['bench/peers/sse-backend.ts'], {
    PORT: String(SSE_PORT),
    EVENTS: String(EVENTS),
    UNITS: String(UNITS),
  });
  const sseUrl = `http://127.0.0.1:${SSE_PORT}`;
  await waitFor(sse, 'first stream', httpOk(`${sseUrl}/`));
  const forwarder = startProc('settle-forwarder', NODE, ['bench/peers/engine.ts'], {
    PORT: String(FORWARDER_PORT),
    BACKEND_URL: sseUrl,
    ENGINE: 'dispatch',
  });
  await waitFor(forwarder, 'first forwarded request', httpOk(`http://127.0.0.1:${FORWARDER_PORT}/`));
  const port = PORT.tollgateRedisW2;
  const databaseUrl = await freshDatabase('tollgate_bench_streams');
  const tollgate = await startTollgate({
    name: 'settle-streams',
    port,
    mode: 'redis',
    databaseUrl,
    redisUrl: run.redisUrl,
    extraEnv: { UPSTREAM_URL: sseUrl },
    // Opened only for the memory readings, after the timed rounds.
    nodeArgs: [`--inspect-port=127.0.0.1:${INSPECTOR_PORT}`],
  });
  await createSettlePlans(port);
  const secret = await createKey(port, 'streams', true, 'bench-settled');
  // The same settled stream embedded: no round trip to Redis before it is forwarded.
  await startTollgate({
    name: 'settle-streams-embedded',
    port: EMBEDDED_STREAMS_PORT,
    mode: 'embedded',
    extraEnv: { UPSTREAM_URL: sseUrl },
  });
  await createSettlePlans(EMBEDDED_STREAMS_PORT);
  // The fixed-cost stream through a replica of its own (same database and Redis), so that each
  // target's process serves every fourth stream. Sharing the settled stream's process, it came right
  // after a settled stream three times in four, the process busy a moment before, while the settled
  // stream came after two or three streams of other processes: that alone put their first events
  // apart by a quarter of a millisecond on a 2-CPU VM.
  await startTollgate({
    name: 'settle-streams-fixed',
    port: FIXED_STREAMS_PORT,
    mode: 'redis',
    databaseUrl,
    redisUrl: run.redisUrl,
    extraEnv: { UPSTREAM_URL: sseUrl },
  });
  const targets = {
    tollgate: { url: `http://127.0.0.1:${port}/bench/chat`, secret },
    // The same stream priced before it is forwarded: what of Tollgate's time is settling.
    fixed: {
      url: `http://127.0.0.1:${FIXED_STREAMS_PORT}/bench/chat`,
      secret: await createKey(port, 'streams-fixed', true, 'bench-fixed-cost'),
    },
    embedded: {
      url: `http://127.0.0.1:${EMBEDDED_STREAMS_PORT}/bench/chat`,
      secret: await createKey(EMBEDDED_STREAMS_PORT, 'streams-embedded', true, 'bench-settled'),
    },
    forwarder: { url: `http://127.0.0.1:${FORWARDER_PORT}/bench/chat`, secret: PEER_SECRET },
  };
  const timesOf = () => ({
    tollgate: [] as number[],
    fixed: [] as number[],
    embedded: [] as number[],
    forwarder: [] as number[],
  });
  const firsts = timesOf();
  const totals = timesOf();
  const alone = timesOf();
  const names = Object.keys(targets) as (keyof typeof targets)[];
  for (let i = 0; i < WARM_STREAMS; i++)
    for (const name of names) await oneStream(targets[name].url, targets[name].secret);
  // Each Tollgate's own sum and count of arrival-to-forwarding times, before and after the timed streams.
  const opsPorts = {
    tollgate: port + PORT.opsOffset,
    fixed: FIXED_STREAMS_PORT + PORT.opsOffset,
    embedded: EMBEDDED_STREAMS_PORT + PORT.opsOffset,
  };
  type Served = keyof typeof opsPorts;
  const wayIn = async (name: Served) => {
    const metric = (part: string) => metricValue(opsPorts[name], `tollgate_proxy_overhead_seconds_${part}`);
    return { sum: await metric('sum'), count: await metric('count') };
  };
  const served = Object.keys(opsPorts) as Served[];
  const wayInBefore = await Promise.all(served.map(wayIn));
  // Interleaved: one stream of each target in turn, the first of them changing each time, so that
  // whatever else the machine does in a round slows them alike. Times of a millisecond or less
  // moved by a third between rounds of a hundred streams of one target after another.
  for (let round = 0; round < ROUNDS; round++) {
    const first = timesOf();
    const total = timesOf();
    const paced = timesOf();
    // The paced streams after the others, alike interleaved: each kind follows its own kind, as what ran
    // just before a stream moves its first event (docs/performance.md).
    for (const pacing of ['', '/paced'])
      for (let i = 0; i < STREAMS; i++)
        for (let j = 0; j < names.length; j++) {
          const name = names[(i + j) % names.length]!;
          const [f, t] = await oneStream(targets[name].url + pacing, targets[name].secret);
          (pacing === '' ? first : paced)[name].push(f);
          if (pacing === '') total[name].push(t);
        }
    for (const name of names) {
      firsts[name].push(median(first[name]));
      totals[name].push(median(total[name]));
      alone[name].push(median(paced[name]));
      log(
        `streams round ${round + 1}/${ROUNDS} ${name}: first event ${fmt(median(first[name]), 2)} ms (alone ${fmt(median(paced[name]), 2)}), whole ${fmt(median(total[name]), 2)} ms`,
      );
    }
  }
  const wayInAfter = await Promise.all(served.map(wayIn));
  // Mean µs from arrival to forwarding over the timed streams, beside the median first event's lead.
  const wayInUs = served.map((_, i) => {
    const [before, after] = [wayInBefore[i]!, wayInAfter[i]!];
    return ((after.sum - before.sum) / (after.count - before.count)) * 1e6;
  });
  const lead = (name: Served) => (median(firsts[name]) - median(firsts.forwarder)) * 1000;
  const pid = tollgate.child.pid as number;
  const inspector = await Inspector.open(pid, INSPECTOR_PORT);
  // Each reading after a full collection: what Tollgate keeps, not the garbage of streams since the last.
  const readings: { heapBytes: number; rssKiB: number }[] = [];
  const read = async () => {
    const heapBytes = await inspector.collectedHeapBytes();
    readings.push({ heapBytes, rssKiB: treeRssKiB(pid) });
  };
  await read();
  let started = 0;
  let ended = 0;
  const worker = async (): Promise<void> => {
    while (started < MEMORY_STREAMS) {
      started++;
      await oneStream(targets.tollgate.url, secret);
      if (++ended % Math.ceil(MEMORY_STREAMS / 10) === 0) await read();
    }
  };
  await Promise.all(Array.from({ length: 20 }, worker));
  inspector.close();
  const mib = (bytes: number) => fmt(bytes / 1024 / 1024, 1);
  await Promise.all([stopProc(sse), stopProc(forwarder)]);
  const through: Record<keyof typeof targets, string> = {
    tollgate: 'Tollgate, Redis mode, settled by the openai preset',
    fixed: 'Tollgate, Redis mode, fixed cost (7), a replica of its own',
    embedded: 'Tollgate, embedded, settled by the openai preset',
    forwarder: 'bare forwarder (bench/peers/engine.ts)',
  };
  const times = (series: ReturnType<typeof timesOf>, name: keyof typeof targets) =>
    `${fmt(median(series[name]), 2)} | ${ratio(median(series[name]), median(series.forwarder))}`;
  const perRound = (values: number[]) => values.map((x) => fmt(x, 2)).join(' / ');
  const row = (name: keyof typeof targets) =>
    `| ${through[name]} | ${times(firsts, name)} | ${times(alone, name)} | ${times(totals, name)} | ${perRound(firsts[name])} | ${perRound(alone[name])} | ${perRound(totals[name])} |`;
  return [
    `A stream of ${EVENTS} events (${STREAMS} streams of each a round, one at a time, the targets in turn, then as many paced, medians; ${fmt(WARM_STREAMS)} streams of each before, the targets in turn). "Alone": the paced stream's first event, its backend waiting before the next:`,
    '',
    '| through | first event ms | ÷ forwarder | first event alone ms | ÷ forwarder | last byte ms | ÷ forwarder | first event per round | alone per round | last byte per round |',
    '|---|--:|--:|--:|--:|--:|--:|---|---|---|',
    ...names.map(row),
    '',
    "Each Tollgate's way in (arrival to forwarding, its `tollgate_proxy_overhead_seconds`, mean over the timed streams) against its first event's lead over the forwarder (the medians above):",
    '',
    ...served.map((name, i) => `- ${through[name]}: ${fmt(wayInUs[i]!, 0)} µs of ${fmt(lead(name), 0)} µs`),
    '',
    `Tollgate over ${fmt(MEMORY_STREAMS)} streams (20 at a time), after a full collection at the start and after each tenth (the inspector's \`HeapProfiler.collectGarbage\`, bench/lib/inspector.ts):`,
    '',
    `- JS heap in use, MiB: ${readings.map((r) => mib(r.heapBytes)).join(' → ')}`,
    `- resident memory, MiB: ${readings.map((r) => mib(r.rssKiB * 1024)).join(' → ')}`,
  ];
}

export async function settle(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  let json: string[] = [];
  // The streams alone start the Redis the JSON loads otherwise start.
  if (env.BENCH_SETTLE_STREAMS_ONLY === '1') run.redisUrl = await privateRedis();
  else json = await jsonLoads();
  const stream = await streams();
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- settle\` (${ROUNDS} alternating rounds, warm-up ${WARMUP} s, backend ${BACKEND_URL}).`,
    '',
    machine(),
    '',
    ...json,
    '',
    ...stream,
  ].join('\n');
}
