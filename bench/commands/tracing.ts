// `npm run bench -- tracing`: what OpenTelemetry traces cost the proxy (docs/guides/tracing.md). One
// embedded Tollgate per state, visited in turn round after round (the order reversed every other
// round): tracing off; every request sampled to a collector answering at once; parentbased_traceidratio
// at 0.01 to it; both again to a collector that never answers (its spans pile up, are dropped and
// counted). Each visit starts its Tollgate afresh: one process can run several per cent faster or slower
// than another of the same build for as long as it lives (how its code was optimised, where its heap
// lies), and a process kept for every round made that luck the state's. With BENCH_BASELINE, a build
// without the tracing code too (e.g. the commit before it, built in its own folder), to check that off
// costs nothing. The collectors are OTLP/HTTP endpoints in the bench's own process. Reported as req/s
// and CPU per request, each against off, plus the spans each collector took and the spans dropped.
import path from 'node:path';
import fs from 'node:fs';
import {
  BASELINE,
  CLIENT_CPUS,
  CPU_COUNT,
  DURATION,
  PIN,
  PORT,
  ROUNDS,
  TARGET_CPUS,
  WARMUP,
  env,
  log,
  positive,
} from '../lib/config.ts';
import { droppedSpans, startCollector } from '../lib/otlp-collector.ts';
import { pinTree, stopProc, treeCpuUs, type Proc } from '../lib/processes.ts';
import { fmt, machine, median, problemsNote } from '../lib/report.ts';
import {
  buildTollgate,
  createKey,
  ensurePlan,
  ensureTools,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

const REQUEST_PATH = '/bench/item?id=42';
const BASE_PORT = 18140;
const COLLECTOR_PORT = 18160;
const HANGING_COLLECTOR_PORT = 18161;

interface State {
  readonly id: string;
  readonly label: string;
  readonly env: Record<string, string>;
  readonly main?: string;
}

const collector = (port: number) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
  // The defaults but the delay: a second between exports, so a run sees many.
  OTEL_BSP_SCHEDULE_DELAY: '1000',
});
const RATIO = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' };

function states(): State[] {
  const list: State[] = [
    { id: 'off', label: 'off (no OTEL_* set)', env: {} },
    { id: 'all', label: 'on, every request sampled', env: collector(COLLECTOR_PORT) },
    {
      id: 'ratio',
      label: 'on, parentbased_traceidratio 0.01',
      env: { ...collector(COLLECTOR_PORT), ...RATIO },
    },
    {
      id: 'all-hung',
      label: 'on, every request sampled, collector hangs',
      env: collector(HANGING_COLLECTOR_PORT),
    },
    {
      id: 'ratio-hung',
      label: 'on, parentbased_traceidratio 0.01, collector hangs',
      env: { ...collector(HANGING_COLLECTOR_PORT), ...RATIO },
    },
  ];
  if (BASELINE !== undefined) {
    const main = path.join(BASELINE, 'dist/src/main.js');
    if (!fs.existsSync(main))
      throw new Error(`BENCH_BASELINE: ${main} does not exist (build it there first)`);
    list.unshift({
      id: 'baseline',
      label: `build without tracing (${path.basename(BASELINE)})`,
      env: {},
      main,
    });
  }
  return list;
}

interface Sample {
  readonly rps: number;
  readonly cpuUs: number;
  readonly p99: number;
}

export async function tracing(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const targets = states();
  await startBackend();
  // The collectors live in this process and stand for a collector on another machine: pinned with its
  // children (the backend), the bench stays off the target's CPU, whose time is what is measured.
  if (PIN) pinTree(process.pid, CLIENT_CPUS);
  const collectors = [
    await startCollector(COLLECTOR_PORT, false),
    await startCollector(HANGING_COLLECTOR_PORT, true),
  ];
  const load = (port: number, secret: string, seconds: number) =>
    wrk({
      url: `http://127.0.0.1:${port}${REQUEST_PATH}`,
      seconds,
      headers: { authorization: `Bearer ${secret}` },
      ...(PIN && { cpus: CLIENT_CPUS }),
    });
  const started: Proc[] = [];
  /** One visit: the state's Tollgate started, warmed, measured, its dropped spans read, stopped. */
  const visit = async (state: State, port: number, round: number): Promise<Sample & { dropped: number }> => {
    const proc = await startTollgate({
      name: `tracing-${state.id}-${round}`,
      port,
      mode: 'embedded',
      extraEnv: state.env,
      ...(state.main !== undefined && { main: state.main }),
    });
    started.push(proc);
    try {
      const pid = proc.child.pid as number;
      if (PIN) pinTree(pid, TARGET_CPUS);
      await ensurePlan(port);
      const secret = await createKey(port, 'tracing-bench');
      await load(port, secret, WARMUP);
      const cpu0 = treeCpuUs(pid);
      const r = await load(port, secret, DURATION);
      if (r.non2xx > 0 || r.socketErrors > 0)
        throw new Error(`${state.id}: ${r.non2xx} non-2xx answers, ${r.socketErrors} socket errors`);
      const cpuUs = (treeCpuUs(pid) - cpu0) / r.requests;
      const dropped = state.id === 'baseline' ? 0 : await droppedSpans(port + PORT.opsOffset);
      return { rps: r.rps, cpuUs, p99: r.p99, dropped };
    } finally {
      await stopProc(proc);
    }
  };

  const samples = new Map<string, Sample[]>(targets.map((s) => [s.id, []]));
  const dropped = new Map<string, number>(targets.map((s) => [s.id, 0]));
  const rounds: Map<string, Sample>[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const byState = new Map<string, Sample>();
      const order = [...targets.entries()];
      for (const [i, state] of round % 2 === 0 ? order : order.reverse()) {
        const { dropped: lost, ...sample } = await visit(state, BASE_PORT + i, round);
        samples.get(state.id)!.push(sample);
        dropped.set(state.id, dropped.get(state.id)! + lost);
        byState.set(state.id, sample);
        log(
          `round ${round + 1}/${ROUNDS} ${state.id}: ${fmt(sample.rps)} req/s, ${fmt(sample.cpuUs, 1)} µs CPU per request`,
        );
      }
      rounds.push(byState);
    }
  } finally {
    for (const c of collectors) c.server.close();
  }

  // Each round's ratio to off in the same round, then the median over the rounds.
  const ratio = (id: string, pick: (s: Sample) => number) =>
    median(rounds.map((round) => pick(round.get(id)!) / pick(round.get('off')!)));
  const rows = targets.map(
    (s) =>
      `| ${s.label} | ${fmt(median(samples.get(s.id)!.map((x) => x.rps)))} | ${ratio(s.id, (x) => x.rps).toFixed(3)} | ${fmt(
        median(samples.get(s.id)!.map((x) => x.cpuUs)),
        1,
      )} | ${ratio(s.id, (x) => x.cpuUs).toFixed(3)} | ${fmt(
        median(samples.get(s.id)!.map((x) => x.p99)),
        2,
      )} | ${s.id === 'baseline' ? '–' : fmt(dropped.get(s.id)!)} | ${samples
        .get(s.id)!
        .map((x) => fmt(x.rps))
        .join(', ')} |`,
  );
  return (
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- tracing\`: one embedded Tollgate per state and round, started afresh for its visit and warmed ${WARMUP} s, \`GET ${REQUEST_PATH}\` with a key whose plan has an hourly limit (never reached) to the nginx backend; the collectors (OTLP/HTTP, http/protobuf) are in the bench's process, one answering 200 at once (it took ${fmt(collectors[0]!.exports())} exports), one never answering (${fmt(collectors[1]!.exports())} exports held). wrk -c${positive(env.BENCH_CONNECTIONS, 50)}; ${ROUNDS} rounds visiting every state in turn (reversed every other round), ${DURATION} s per visit${PIN ? `; the target on CPU ${TARGET_CPUS}, wrk, nginx and the collectors on CPU ${CLIENT_CPUS}` : ` (${CPU_COUNT} CPUs shared)`}. Values are medians of the visits; the ratios are medians over the rounds of each round's ratio to off. Spans dropped: \`tollgate_trace_spans_dropped_total\` at the end of each visit, summed.`,
      '',
      machine(),
      '',
      '| tracing | req/s | × off | CPU µs per request | × off | p99 ms | spans dropped | req/s per round |',
      '|---|--:|--:|--:|--:|--:|--:|---|',
      ...rows,
    ].join('\n') + problemsNote(started)
  );
}
