// `npm run bench -- usage-batch`: what applying one usage batch of many keys to Postgres costs (the
// built UsageRepository.applyBatch, in the bench's own process): BENCH_BATCH_KEYS (10,000) keys, each
// with 3 paths, 4 customers and 2 routes over 2 minutes, as the built UsageRecorder hands them over,
// applied under a new batch id each round into a fresh database per build. With BENCH_BASELINE (the
// folder of another build), that build's repository applies the same batch in alternating rounds: a
// before/after comparison in one run. Per build: milliseconds per batch (wall, Postgres' work
// included) and this process's CPU milliseconds per batch, medians over BENCH_ROUNDS and every round.
import { randomBytes, randomUUID } from 'node:crypto';
import type * as LoggerModule from '../../src/ops/logger.ts';
import type * as MetricsModule from '../../src/ops/metrics.ts';
import type * as DbModule from '../../src/store/db.ts';
import type * as MigrateModule from '../../src/store/migrate.ts';
import type * as RecorderModule from '../../src/usage/recorder.ts';
import type * as UsageRepositoryModule from '../../src/usage/usage-repository.ts';
import type { UsageBatch } from '../../src/usage/usage.ts';
import { builtModule } from '../lib/built-module.ts';
import { BASELINE, PG_URL, ROOT, ROUNDS, log, positive } from '../lib/config.ts';
import { fmt, machine, median, ratio } from '../lib/report.ts';
import { buildTollgate, freshDatabase } from '../lib/services.ts';

const KEYS = positive(process.env.BENCH_BATCH_KEYS, 10_000);
const ROUTES = ['search', 'lookup'] as const;

interface Build {
  readonly name: string;
  readonly apply: (batch: UsageBatch) => Promise<void>;
  readonly close: () => Promise<void>;
  readonly wallMs: number[];
  readonly cpuMs: number[];
}

/** The batch the built recorder hands over for KEYS keys' requests of two minutes. */
async function batchOfManyKeys(): Promise<UsageBatch> {
  const { UsageRecorder } = await builtModule<typeof RecorderModule>('usage/recorder.js');
  const { createLogger } = await builtModule<typeof LoggerModule>('ops/logger.js');
  const { Metrics } = await builtModule<typeof MetricsModule>('ops/metrics.js');
  let handed: UsageBatch | undefined;
  const sink = { write: (batch: UsageBatch) => ((handed = batch), Promise.resolve()), heldRequests: () => 0 };
  const recorder = new UsageRecorder(sink, createLogger('silent'), new Metrics(), 3_600_000);
  const minute = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
  for (let k = 0; k < KEYS; k++)
    for (let i = 0; i < 12; i++)
      recorder.record({
        keyId: `key_batch_${k}`,
        consumerId: k % 2 === 0 ? `con_batch_${k % 100}` : null,
        endpoint: `/v1/items/${i % 3}`,
        routeId: ROUTES[i % 2]!,
        customerId: `customer-${i % 4}`,
        status: i % 6 === 0 ? 429 : 200,
        outcome: i % 6 === 0 ? 'rateLimited' : undefined,
        cost: i % 6 === 0 ? 0 : 1,
        durationMs: 0.5 + i,
        atMs: minute + (i % 2) * 60_000,
      });
  await recorder.flush();
  return handed!;
}

/** A build's repository over a fresh, migrated database holding the batch's keys. */
async function openBuild(name: string, folder: string, database: string): Promise<Build> {
  const { openPostgres } = await builtModule<typeof DbModule>('store/db.js', folder);
  const { migrate } = await builtModule<typeof MigrateModule>('store/migrate.js', folder);
  const { UsageRepository } = await builtModule<typeof UsageRepositoryModule>(
    'usage/usage-repository.js',
    folder,
  );
  const handle = await openPostgres(await freshDatabase(database));
  await migrate(handle);
  const now = new Date();
  for (let i = 0; i < KEYS; i += 1_000)
    await handle.db
      .insertInto('api_keys')
      .values(
        Array.from({ length: Math.min(1_000, KEYS - i) }, (_, j) => ({
          id: `key_batch_${i + j}`,
          name: 'bench',
          secret_hash: randomBytes(32),
          secret_ciphertext: randomBytes(60),
          created_at: now,
          last_updated: now,
        })),
      )
      .execute();
  const repository = new UsageRepository(handle.db);
  return {
    name,
    apply: async (batch) => void (await repository.applyBatch(randomUUID(), batch)),
    close: () => handle.close(),
    wallMs: [],
    cpuMs: [],
  };
}

export async function usageBatch(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const batch = await batchOfManyKeys();
  const builds = [await openBuild('this build', ROOT, 'tollgate_bench_batch')];
  if (BASELINE) builds.unshift(await openBuild('baseline', BASELINE, 'tollgate_bench_batch_baseline'));
  try {
    for (const build of builds) await build.apply(batch); // the first batch inserts; the timed ones add
    for (let round = 1; round <= ROUNDS; round++)
      for (const build of builds) {
        const cpu = process.cpuUsage();
        const started = performance.now();
        await build.apply(batch);
        build.wallMs.push(performance.now() - started);
        const used = process.cpuUsage(cpu);
        build.cpuMs.push((used.user + used.system) / 1_000);
        log(`round ${round}/${ROUNDS} ${build.name}: ${fmt(build.wallMs.at(-1)!)} ms`);
      }
  } finally {
    for (const build of builds) await build.close();
  }
  const rows = builds.map(
    (b) =>
      `| ${b.name} | ${fmt(median(b.wallMs))} | ${fmt(median(b.cpuMs))} | ${b.wallMs.map((ms) => fmt(ms)).join(', ')} |`,
  );
  const [before, after] = builds;
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- usage-batch\`: one batch of ${fmt(batch.size)} keys (3 paths, 4 customers and 2 routes each, over 2 minutes, half under a consumer) applied to Postgres (${PG_URL}) by the built UsageRepository, ${ROUNDS} rounds${BASELINE ? `, alternating with BENCH_BASELINE's build (${BASELINE})` : ''}.`,
    '',
    machine(),
    '',
    '| build | ms a batch (median) | this process CPU ms a batch | every round, ms |',
    '|---|--:|--:|---|',
    ...rows,
    ...(after
      ? [
          '',
          `This build takes ${ratio(median(after.wallMs), median(before!.wallMs))} the baseline's time a batch.`,
        ]
      : []),
  ].join('\n');
}
