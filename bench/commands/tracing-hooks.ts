// `npm run bench -- tracing-hooks`: what the tracing hooks cost a request on the proxy's path, alone
// (the built modules, in the bench's own process): `proxied`, `forwarding` and `finished` on one
// request object, as the proxy calls them, for every request sampled and for parentbased_traceidratio
// at 0.01 (where 99 in 100 requests are left out), without and with an incoming sampled
// `traceparent`. The collector is an address nothing listens on: exports fail and are counted, and the
// batch queue, full after 2,048 spans, drops the rest (as a hanging collector does). CPU nanoseconds per
// request (process.cpuUsage, steadier than wall time on a shared machine), the lowest of 9 batches and
// their median. With BENCH_BASELINE, the same for that build, in the same batches.
import path from 'node:path';
import type * as SetupModule from '../../src/tracing/otel-setup.ts';
import type { Tracing } from '../../src/tracing/tracer.ts';
import { BASELINE, ROOT } from '../lib/config.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { buildTollgate } from '../lib/services.ts';
import { tracedRequest, tracingSettings } from '../lib/traced-request.ts';

const REQUESTS = 200_000;
const BATCHES = 9;
/** Nothing listens there: every export fails at once. */
const NOWHERE = 'http://127.0.0.1:9/v1/traces';

const CASES = [
  { label: 'every request sampled', sampler: 'parentbased_always_on', incoming: false },
  { label: 'parentbased_traceidratio 0.01', sampler: 'parentbased_traceidratio', incoming: false },
  {
    label: 'parentbased_traceidratio 0.01, incoming traceparent sampled',
    sampler: 'parentbased_traceidratio',
    incoming: true,
  },
] as const;

function cpuNsPerRequest(tracing: Tracing | undefined, incoming: boolean): number {
  const started = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) tracedRequest(tracing, i, incoming);
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1000) / REQUESTS;
}

export async function tracingHooks(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const builds = [{ name: 'this build', root: ROOT }];
  if (BASELINE !== undefined) builds.push({ name: path.basename(BASELINE), root: BASELINE });
  const targets: { build: string; label: string; tracing: Tracing | undefined; incoming: boolean }[] = [];
  for (const build of builds) {
    const { otelTracing } = (await import(
      path.join(build.root, 'dist/src/tracing/otel-setup.js')
    )) as typeof SetupModule;
    for (const c of CASES)
      targets.push({
        build: build.name,
        label: c.label,
        tracing: otelTracing(tracingSettings(NOWHERE, c.sampler), () => {}),
        incoming: c.incoming,
      });
  }
  const control = {
    build: '–',
    label: 'no hooks (the request object alone)',
    tracing: undefined,
    incoming: false,
  };
  const all = [control, ...targets];
  const samples = new Map(all.map((t) => [t, [] as number[]]));
  for (const t of all) cpuNsPerRequest(t.tracing, t.incoming); // warm-up
  for (let batch = 0; batch < BATCHES; batch++)
    for (const t of batch % 2 === 0 ? all : [...all].reverse())
      samples.get(t)!.push(cpuNsPerRequest(t.tracing, t.incoming));
  await Promise.all(targets.map((t) => t.tracing!.shutdown(100)));
  const controlNs = Math.min(...samples.get(control)!);
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- tracing-hooks\`: the built tracing hooks alone (\`proxied\`, \`forwarding\`, \`finished\` on one request object), ${fmt(REQUESTS)} requests per batch, ${BATCHES} batches alternating between the rows; CPU time by \`process.cpuUsage\`. "Hooks" is the lowest batch less the control's lowest.`,
    '',
    machine(),
    '',
    '| build | sampler | CPU ns per request, lowest batch | median batch | hooks, ns |',
    '|---|---|--:|--:|--:|',
    ...all.map((t) => {
      const ns = samples.get(t)!;
      const lowest = Math.min(...ns);
      return `| ${t.build} | ${t.label} | ${fmt(lowest)} | ${fmt(median(ns))} | ${t.tracing === undefined ? '–' : fmt(lowest - controlNs)} |`;
    }),
  ].join('\n');
}
