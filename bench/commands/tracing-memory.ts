// `npm run bench -- tracing-memory`: whether a collector that never answers makes Tollgate's memory
// grow. Two embedded Tollgates under the same steady load at once for BENCH_MEMORY_MINUTES (5):
// tracing off, and every request sampled to a collector (in the bench's process) that holds every
// export unanswered. Each one's resident memory and heap are read from /metrics every 5 seconds and
// reported per minute: the heap's lowest reading is what survives a collection, so a leak shows as
// that floor rising, and the tracing one against off shows what tracing itself keeps.
import { setTimeout as sleep } from 'node:timers/promises';
import { CONNECTIONS, PORT, env, log, positive } from '../lib/config.ts';
import { metricValue } from '../lib/metrics.ts';
import { droppedSpans, startCollector } from '../lib/otlp-collector.ts';
import { stopProc } from '../lib/processes.ts';
import { fmt, machine, problemsNote } from '../lib/report.ts';
import {
  buildTollgate,
  createKey,
  ensurePlan,
  ensureTools,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

const MINUTES = positive(env.BENCH_MEMORY_MINUTES, 5);
const READ_EVERY_MS = 5_000;
const HANGING_COLLECTOR_PORT = 18162;
const MiB = 1_048_576;

interface Minute {
  rssMaxMiB: number;
  heapMinMiB: number;
  heapMaxMiB: number;
}

export async function tracingMemory(): Promise<string> {
  ensureTools(['nginx', 'wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await startBackend();
  const collector = await startCollector(HANGING_COLLECTOR_PORT, true);
  const states: { label: string; env: Record<string, string> }[] = [
    { label: 'off (no OTEL_* set)', env: {} },
    {
      label: 'every request sampled, collector never answers',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${HANGING_COLLECTOR_PORT}` },
    },
  ];
  const running: {
    label: string;
    port: number;
    proc: Awaited<ReturnType<typeof startTollgate>>;
    secret: string;
    minutes: Minute[];
  }[] = [];
  for (const [i, state] of states.entries()) {
    const port = PORT.tollgateEmbedded + i;
    const proc = await startTollgate({
      name: `tracing-memory-${i}`,
      port,
      mode: 'embedded',
      extraEnv: state.env,
    });
    await ensurePlan(port);
    running.push({
      ...state,
      port,
      proc,
      secret: await createKey(port, 'tracing-memory'),
      minutes: [] as Minute[],
    });
  }
  const loads = [];
  try {
    let loading = true;
    const reading = (async () => {
      const started = Date.now();
      while (loading) {
        const minute = Math.floor((Date.now() - started) / 60_000);
        for (const t of running) {
          const ops = t.port + PORT.opsOffset;
          const rss = (await metricValue(ops, 'tollgate_process_resident_memory_bytes')) / MiB;
          const heap = (await metricValue(ops, 'tollgate_nodejs_heap_size_used_bytes')) / MiB;
          const m = (t.minutes[minute] ??= { rssMaxMiB: 0, heapMinMiB: Infinity, heapMaxMiB: 0 });
          m.rssMaxMiB = Math.max(m.rssMaxMiB, rss);
          m.heapMinMiB = Math.min(m.heapMinMiB, heap);
          m.heapMaxMiB = Math.max(m.heapMaxMiB, heap);
        }
        await sleep(READ_EVERY_MS);
      }
    })();
    loads.push(
      ...(await Promise.all(
        running.map((t) =>
          wrk({
            url: `http://127.0.0.1:${t.port}/bench/item?id=42`,
            seconds: MINUTES * 60,
            connections: Math.max(2, Math.floor(CONNECTIONS / 2)),
            headers: { authorization: `Bearer ${t.secret}` },
          }),
        ),
      )),
    );
    loading = false;
    await reading;
    for (const [i, r] of loads.entries())
      if (r.non2xx > 0 || r.socketErrors > 0)
        throw new Error(`${running[i]!.label}: ${r.non2xx} non-2xx answers, ${r.socketErrors} socket errors`);
  } finally {
    collector.server.close();
  }
  const dropped = await droppedSpans(running[1]!.port + PORT.opsOffset);
  for (const t of running) await stopProc(t.proc);
  log(`tracing-memory: ${fmt(dropped)} spans dropped`);
  const minutes = running[0]!.minutes.map((_, i) => i).filter((i) => i < MINUTES);
  return (
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- tracing-memory\`: two embedded Tollgates loaded at once for ${MINUTES} minutes (wrk -c${Math.max(2, Math.floor(CONNECTIONS / 2))} each), tracing off and every request sampled to an OTLP/HTTP collector that never answers (${fmt(collector.exports())} exports held, ${fmt(dropped)} spans dropped and counted); \`tollgate_process_resident_memory_bytes\` and \`tollgate_nodejs_heap_size_used_bytes\` read every ${READ_EVERY_MS / 1000} s. Requests answered: ${loads.map((r, i) => `${running[i]!.label} ${fmt(r.requests)}`).join(', ')}.`,
      '',
      machine(),
      '',
      `| minute | ${running.map((t) => `${t.label}: RSS MiB, highest | heap MiB, lowest–highest`).join(' | ')} |`,
      `|--:|${running.map(() => '--:|--:|').join('')}`,
      ...minutes.map(
        (i) =>
          `| ${i + 1} | ${running
            .map((t) => {
              const m = t.minutes[i]!;
              return `${fmt(m.rssMaxMiB, 1)} | ${fmt(m.heapMinMiB, 1)}–${fmt(m.heapMaxMiB, 1)}`;
            })
            .join(' | ')} |`,
      ),
    ].join('\n') + problemsNote(running.map((t) => t.proc))
  );
}
