// `npm run bench -- tracing-export`: what exporting the proxy's spans costs, apart from making them.
// The built tracing hooks (bench/lib/traced-request.ts) with every request sampled, driven at a steady
// pace in the bench's own process, export to a collector in another process that answers at once, and
// to one that never answers (its exports pile up, the queue fills and later spans are dropped): the
// difference in CPU per request is the export, encoding and sending. The pace leaves the event loop
// turns to send in, as a proxy under load does.
import net from 'node:net';
import type * as SetupModule from '../../src/tracing/otel-setup.ts';
import type { Tracing } from '../../src/tracing/tracer.ts';
import { NODE, ROOT, positive, env } from '../lib/config.ts';
import { startProc, stopProc, waitFor } from '../lib/processes.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { buildTollgate } from '../lib/services.ts';
import { tracedRequest, tracingSettings } from '../lib/traced-request.ts';

const ANSWERING_PORT = 18162;
const HANGING_PORT = 18163;
/** Requests per millisecond: 20,000 a second, about what one Tollgate process serves here. */
const PER_MS = 20;
const SECONDS = positive(env.BENCH_DURATION, 8);
const ROUNDS = 5;

const listening = (port: number) => () =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });

/** CPU µs per request over `SECONDS` of requests at `PER_MS`. */
async function cpuUsPerRequest(tracing: Tracing): Promise<number> {
  const started = process.cpuUsage();
  const until = Date.now() + SECONDS * 1000;
  let requests = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      for (let i = 0; i < PER_MS; i++) tracedRequest(tracing, requests++, false);
      if (Date.now() < until) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  const used = process.cpuUsage(started);
  return (used.user + used.system) / requests;
}

export async function tracingExport(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const collectors = [
    startProc('collector-answering', NODE, ['bench/lib/collector-main.ts', String(ANSWERING_PORT)]),
    startProc('collector-hanging', NODE, ['bench/lib/collector-main.ts', String(HANGING_PORT), 'hang']),
  ];
  await waitFor(collectors[0]!, 'port', listening(ANSWERING_PORT));
  await waitFor(collectors[1]!, 'port', listening(HANGING_PORT));
  const { otelTracing } = (await import(`${ROOT}/dist/src/tracing/otel-setup.js`)) as typeof SetupModule;
  const sampled = 'parentbased_always_on';
  const targets = [
    {
      label: 'to a collector answering at once',
      tracing: otelTracing(
        tracingSettings(`http://127.0.0.1:${ANSWERING_PORT}/v1/traces`, sampled),
        () => {},
      ),
    },
    {
      label: 'to a collector that never answers',
      tracing: otelTracing(tracingSettings(`http://127.0.0.1:${HANGING_PORT}/v1/traces`, sampled), () => {}),
    },
  ];
  const samples = new Map(targets.map((t) => [t, [] as number[]]));
  try {
    for (let round = 0; round < ROUNDS; round++)
      for (const t of round % 2 === 0 ? targets : [...targets].reverse())
        samples.get(t)!.push(await cpuUsPerRequest(t.tracing));
  } finally {
    await Promise.all(targets.map((t) => t.tracing.shutdown(100)));
    await Promise.all(collectors.map((c) => stopProc(c)));
  }
  const [answering, hanging] = targets.map((t) => median(samples.get(t)!));
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- tracing-export\`: the built tracing hooks, every request sampled, ${fmt(PER_MS * 1000)} requests a second for ${SECONDS} s per visit in the bench's process, ${ROUNDS} rounds alternating between the rows; the collectors in a process of their own; CPU time by \`process.cpuUsage\` (the bench's process: hooks, batch queue, encoding and sending). Exporting costs the difference between the rows.`,
    '',
    machine(),
    '',
    '| collector | CPU µs per request, median | rounds |',
    '|---|--:|---|',
    ...targets.map(
      (t) =>
        `| ${t.label} | ${fmt(median(samples.get(t)!), 2)} | ${samples
          .get(t)!
          .map((us) => fmt(us, 2))
          .join(', ')} |`,
    ),
    '',
    `Exporting: ${fmt(answering! - hanging!, 2)} µs of CPU per request.`,
  ].join('\n');
}
