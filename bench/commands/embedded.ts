// `npm run bench -- embedded`: the embedded default (SQLite, in-process counters) against Redis mode
// (Postgres + Redis), same machine, same backend, alternating rounds, each round a first start on an
// empty database: time to ready, resident memory idle and under load, throughput and p99, set against
// the targets of docs/decisions/0007.
import { setTimeout as sleep } from 'node:timers/promises';
import { CONNECTIONS, DURATION, PORT, ROUNDS, THREADS, WARMUP, log } from '../lib/config.ts';
import { stopProc, treeRssKiB, type Proc } from '../lib/processes.ts';
import { fmt, machine, median, problemsNote, ratio } from '../lib/report.ts';
import {
  buildTollgate,
  createKey,
  ensurePlan,
  ensureTools,
  freshDatabase,
  runRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

interface Round {
  readyMs: number;
  idleKiB: number;
  loadKiB: number;
  rps: number;
  p99: number;
}

const MODES = ['embedded', 'redis'] as const;
type Mode = (typeof MODES)[number];

/** The highest resident memory of the process tree, sampled every 200 ms while `during` runs. */
async function peakRssKiB<T>(pid: number, during: Promise<T>): Promise<[T, number]> {
  let peak = treeRssKiB(pid);
  let done = false;
  const sampler = (async () => {
    while (!done) {
      peak = Math.max(peak, treeRssKiB(pid));
      await sleep(200);
    }
  })();
  const result = await during.finally(() => (done = true));
  await sampler;
  return [result, peak];
}

async function measure(mode: Mode, round: number, procs: Proc[]): Promise<Round> {
  const port = mode === 'embedded' ? PORT.tollgateEmbedded : PORT.tollgateRedis;
  // A first start every round: an empty DATA_DIR, or a database just created.
  const databaseUrl = mode === 'redis' ? await freshDatabase() : undefined;
  const started = performance.now();
  const tg = await startTollgate({ name: `${mode}-${round}`, port, mode, databaseUrl });
  const readyMs = performance.now() - started;
  procs.push(tg);
  try {
    await ensurePlan(port);
    const secret = await createKey(port, 'embedded-bench');
    const pid = tg.child.pid as number;
    await sleep(2000);
    const idleKiB = treeRssKiB(pid);
    const load = (seconds: number) =>
      wrk({
        url: `http://127.0.0.1:${port}/bench/item?id=42`,
        seconds,
        headers: { authorization: `Bearer ${secret}` },
      });
    await load(WARMUP);
    const [r, loadKiB] = await peakRssKiB(pid, load(DURATION));
    return { readyMs, idleKiB, loadKiB, rps: r.rps, p99: r.p99 };
  } finally {
    await stopProc(tg);
  }
}

export async function embedded(): Promise<string> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await runRedis();
  await startBackend();
  const rounds = new Map<Mode, Round[]>(MODES.map((m) => [m, []]));
  const procs: Proc[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? MODES : [...MODES].reverse()) {
      const r = await measure(mode, round + 1, procs);
      rounds.get(mode)?.push(r);
      log(
        `round ${round + 1}/${ROUNDS} ${mode}: ready ${fmt(r.readyMs)} ms, idle ${fmt(r.idleKiB / 1024)} MiB, under load ${fmt(r.loadKiB / 1024)} MiB, ${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 2)} ms`,
      );
    }
  }
  const med = (mode: Mode, pick: (r: Round) => number) => median((rounds.get(mode) ?? []).map(pick));
  const row = (label: string, pick: (r: Round) => number, show: (n: number) => string, target: string) => {
    const e = med('embedded', pick);
    const g = med('redis', pick);
    const perRound = (rounds.get('embedded') ?? []).map((r) => show(pick(r))).join(' / ');
    return `| ${label} | ${show(e)} | ${show(g)} | ${ratio(e, g)} | ${target} | ${perRound} |`;
  };
  const mib = (kib: number) => `${fmt(kib / 1024)} MiB`;
  const body =
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- embedded\` (one process each, a first start on an empty database every round; ${ROUNDS} alternating rounds; wrk -t${THREADS} -c${CONNECTIONS}, ${DURATION} s after a ${WARMUP} s warm-up, one key bound to a plan that never refuses; ready = spawn to the first 200 from /readyz, polled every 100 ms; idle = 2 s after the key was created; under load = the highest of samples every 200 ms; medians of the rounds).`,
      '',
      machine(),
      '',
      '| figure | embedded (SQLite, in-process counters) | Redis mode (Postgres + Redis) | embedded ÷ Redis mode | target (docs/decisions/0007) | embedded per round |',
      '|---|--:|--:|--:|---|---|',
      row(
        'time to ready after a first start',
        (r) => r.readyMs,
        (n) => `${fmt(n / 1000, 2)} s`,
        '≤ 1 s',
      ),
      row('resident memory, idle', (r) => r.idleKiB, mib, '≤ 200 MB (191 MiB)'),
      row('resident memory under load', (r) => r.loadKiB, mib, '≤ 250 MB (238 MiB)'),
      row(
        'req/s',
        (r) => r.rps,
        (n) => fmt(n),
        '≥ Redis mode',
      ),
      row(
        'p99 ms',
        (r) => r.p99,
        (n) => fmt(n, 2),
        '≤ 1.2 × Redis mode',
      ),
    ].join('\n') + problemsNote(procs);
  return body;
}
