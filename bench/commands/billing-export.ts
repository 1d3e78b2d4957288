// `npm run bench -- billing-export`: an hour of usage of 10,000 keys exported once by each export type
// (the built BillingExporter, the embedded SQLite store in a temporary directory) to a local receiver
// that takes every request at once: the requests each type needs, the events they carry, and how long
// the export takes until everything is delivered (manual runs back to back; a run sends at most 5,000
// requests). The receiver answers immediately, so the time is Tollgate's: planning, the sends'
// bookkeeping and HTTP on loopback.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type * as ExportModule from '../../src/billing/billing-export.ts';
import type * as ExporterModule from '../../src/billing/billing-exporter.ts';
import type * as RepositoryModule from '../../src/billing/export-repository.ts';
import type * as LoggerModule from '../../src/ops/logger.ts';
import type * as MetricsModule from '../../src/ops/metrics.ts';
import type * as DbModule from '../../src/store/db.ts';
import type * as MigrateModule from '../../src/store/migrate.ts';
import type * as UsageRepositoryModule from '../../src/usage/usage-repository.ts';
import type * as UsageModule from '../../src/usage/usage.ts';
import { builtModule } from '../lib/built-module.ts';
import { positive } from '../lib/config.ts';
import { fmt, machine } from '../lib/report.ts';
import { buildTollgate } from '../lib/services.ts';

const SUBJECTS = positive(process.env.BENCH_BILLING_SUBJECTS, 10_000);
const HOUR = 3_600_000;

/** Takes every request of every service at once; Stripe's session endpoint answers a token. */
async function countingReceiver() {
  const seen = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      if (req.url === '/v2/billing/meter_event_session') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            authentication_token: 'token_bench',
            expires_at: new Date(Date.now() + 15 * 60_000).toISOString(),
          }),
        );
        return;
      }
      seen.requests++;
      seen.bytes += bytes;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { seen, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

export async function billingExport(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const { EXPORT_TYPES } = await builtModule<typeof ExportModule>('billing/billing-export.js');
  const { BillingExporter } = await builtModule<typeof ExporterModule>('billing/billing-exporter.js');
  const { BillingExportRepository } = await builtModule<typeof RepositoryModule>(
    'billing/export-repository.js',
  );
  const { createLogger } = await builtModule<typeof LoggerModule>('ops/logger.js');
  const { Metrics } = await builtModule<typeof MetricsModule>('ops/metrics.js');
  const { openEmbedded } = await builtModule<typeof DbModule>('store/db.js');
  const { migrate } = await builtModule<typeof MigrateModule>('store/migrate.js');
  const { UsageRepository } = await builtModule<typeof UsageRepositoryModule>('usage/usage-repository.js');
  const { emptyBucket, emptyKeyUsage } = await builtModule<typeof UsageModule>('usage/usage.js');

  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-billing-'));
  const handle = await openEmbedded(dir);
  const receiver = await countingReceiver();
  try {
    await migrate(handle);
    // The hour before last: closed, and within every service's age limit.
    const hourStart = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
    const keyIds = Array.from({ length: SUBJECTS }, (_, i) => `key_bench_${i}`);
    for (let i = 0; i < keyIds.length; i += 500)
      await handle.db
        .insertInto('api_keys')
        .values(
          keyIds.slice(i, i + 500).map((id, j) => ({
            id,
            name: 'bench',
            secret_hash: randomBytes(32),
            secret_ciphertext: randomBytes(60),
            external_id: `cus_${i + j}`,
            created_at: new Date(hourStart - HOUR),
            last_updated: new Date(hourStart - HOUR),
          })),
        )
        .execute();
    const batch = new Map(
      keyIds.map((id, i) => {
        const counts = {
          ...emptyBucket(),
          requests: 1 + (i % 7),
          successful: 1 + (i % 7),
          cost: 1 + (i % 7),
        };
        const usage = emptyKeyUsage();
        usage.endpoints.set('/bench', counts);
        usage.minutes.set(hourStart + (i % 60) * 60_000, counts);
        return [id, usage] as const;
      }),
    );
    await new UsageRepository(handle.db, () => hourStart + HOUR).applyBatch(randomUUID(), batch);

    const clock = () => hourStart + 2 * HOUR;
    const exporter = new BillingExporter(
      handle.db,
      [randomBytes(32)],
      createLogger('silent'),
      new Metrics(),
      clock,
      {
        runEveryMs: 3_600_000,
        settleMs: 60_000,
      },
    );
    const rows: string[] = [];
    for (const type of EXPORT_TYPES) {
      const id = `bex_bench_${type}`;
      await new BillingExportRepository(handle.db).insert({
        id,
        type,
        url: receiver.url + (type === 'cloudevents' ? '/events' : ''),
        streamUrl: null,
        credentialCiphertext: null,
        eventName: 'api_requests',
        interval: 'hour',
        subject: 'key',
        customerField: null,
        createdAt: new Date(hourStart - HOUR),
      });
      const before = { ...receiver.seen };
      const started = performance.now();
      let runs = 0;
      let delivered = 0;
      for (;;) {
        const result = await exporter.runNow(id);
        if (!('run' in result)) throw new Error(`run of ${type}: ${JSON.stringify(result)}`);
        runs++;
        delivered += result.run.delivered;
        if (result.run.delivered === 0 || delivered >= SUBJECTS) break;
      }
      const ms = performance.now() - started;
      const requests = receiver.seen.requests - before.requests;
      rows.push(
        `| ${type} | ${fmt(delivered)} | ${fmt(requests)} | ${fmt(delivered / requests, 1)} | ${fmt(runs)} | ${fmt(ms / 1000, 1)} | ${fmt(delivered / (ms / 1000))} |`,
      );
    }
    await exporter.stop();
    return [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- billing-export\`: an hour of usage of ${fmt(SUBJECTS)} keys, exported by the built BillingExporter on the embedded store to a local receiver that answers at once; manual runs back to back until all is delivered.`,
      '',
      machine(),
      '',
      '| type | events delivered | requests | events a request | runs | seconds | events/s |',
      '|---|--:|--:|--:|--:|--:|--:|',
      ...rows,
    ].join('\n');
  } finally {
    await receiver.close();
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
