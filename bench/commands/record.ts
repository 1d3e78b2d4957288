// `npm run bench -- record`: what counting one request in usage costs on the hot path, the recorder's
// `record` alone (the built module, in the bench's own process): 2,000,000 requests of one key over 10
// paths, 100 customers and 3 routes (one of them the catch-all), half of them under a consumer, handed
// over every 200,000 as the recorder does once a second. Nanoseconds per request, the fastest of 9
// batches and their median. Run it on two builds, one after the other, to compare them.
import type * as LoggerModule from '../../src/ops/logger.ts';
import type * as MetricsModule from '../../src/ops/metrics.ts';
import type * as RecorderModule from '../../src/usage/recorder.ts';
import type { RequestFacts, UsageSink } from '../../src/usage/usage.ts';
import { builtModule } from '../lib/built-module.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { buildTollgate } from '../lib/services.ts';

const REQUESTS = 2_000_000;
const HAND_OVER_EVERY = 200_000;
const BATCHES = 9;
const ROUTES = ['search', 'lookup', null] as const;

/** Takes every batch and keeps nothing: only the recorder's own work is measured. */
const discard: UsageSink = { write: () => Promise.resolve(), heldRequests: () => 0 };

export async function record(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const { UsageRecorder } = await builtModule<typeof RecorderModule>('usage/recorder.js');
  const { createLogger } = await builtModule<typeof LoggerModule>('ops/logger.js');
  const { Metrics } = await builtModule<typeof MetricsModule>('ops/metrics.js');
  const recorder = new UsageRecorder(discard, createLogger('silent'), new Metrics(), 3_600_000);
  const now = Date.now();
  const facts: RequestFacts[] = Array.from({ length: 1_000 }, (_, i) => ({
    keyId: 'key_bench',
    consumerId: i % 2 === 0 ? 'con_bench' : null,
    endpoint: `/v1/items/${i % 10}`,
    routeId: ROUTES[i % ROUTES.length]!,
    customerId: `customer-${i % 100}`,
    status: i % 20 === 0 ? 429 : 200,
    outcome: i % 20 === 0 ? 'rateLimited' : undefined,
    cost: i % 20 === 0 ? 0 : 1,
    durationMs: 0.5 + (i % 37),
    atMs: now + i,
  }));
  const perBatch: number[] = [];
  for (let batch = 0; batch < BATCHES; batch++) {
    let ns = 0;
    for (let done = 0; done < REQUESTS; done += HAND_OVER_EVERY) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < HAND_OVER_EVERY; i++) recorder.record(facts[i % facts.length]!);
      ns += Number(process.hrtime.bigint() - started);
      await recorder.flush();
    }
    perBatch.push(ns / REQUESTS);
  }
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- record\`: the built \`UsageRecorder.record\` alone, ${fmt(REQUESTS)} requests of one key over 10 paths, 100 customers and 3 routes (one the catch-all), half under a consumer, one in 20 rate-limited, handed over every ${fmt(HAND_OVER_EVERY)}; ${BATCHES} batches.`,
    '',
    machine(),
    '',
    '| ns per request, fastest batch | median batch | every batch |',
    '|--:|--:|---|',
    `| ${fmt(Math.min(...perBatch), 1)} | ${fmt(median(perBatch), 1)} | ${perBatch.map((n) => fmt(n)).join(', ')} |`,
  ].join('\n');
}
