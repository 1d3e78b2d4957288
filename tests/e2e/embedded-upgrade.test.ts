/**
 * The built server started on a DATA_DIR of the PGlite era (PGlite's folder, the generated encryption
 * key, a usage journal kept at the last SIGTERM) upgrades it to the SQLite store and serves on: the
 * key's secret opens with the key file, the previous secret of a roll still works, the admin token
 * authenticates, and the journal's usage is counted exactly once (the batch PGlite had applied is
 * not counted again). The next start has nothing to upgrade.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageJournal } from '../../src/usage/journal.js';
import type { KeyUsage } from '../../src/usage/usage.js';
import { createPgliteDataDir } from '../helpers/pglite-data-dir.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, totalOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-upgrade-e2e-'));
let backend: Backend;
let tollgate: Tollgate | undefined;

const usage = (requests: number): KeyUsage => ({
  endpoints: new Map([['/v1/journal', { requests, successful: requests, failed: 0, totalDurationMs: requests }]]),
  customers: new Map(),
  minutes: new Map([[Date.UTC(2026, 10, 21, 9, 0), { requests, successful: requests, failed: 0, rateLimited: 0, totalDurationMs: requests }]]),
  days: new Map(),
});

beforeAll(async () => {
  backend = await startBackend();
}, 60_000);

afterAll(async () => {
  await tollgate?.stop();
  await backend?.close();
  rmSync(dataDir, { recursive: true, force: true });
  expectNoSecretsLogged();
}, 60_000);

it('upgrades a PGlite DATA_DIR at start, keeps its secrets, tokens and usage, and counts the journal once', async () => {
  const written = await createPgliteDataDir(dataDir);
  // The last SIGTERM before the upgrade kept two batches: one PGlite had applied meanwhile, one it had not.
  const journal = new UsageJournal(join(dataDir, 'usage-journal'));
  expect(journal.reserve()).toBe(true);
  const { id } = written.key;
  expect(journal.save([{ batchId: written.batchId, batch: new Map([[id, usage(written.requests)]]) }, { batchId: 'kept-at-exit', batch: new Map([[id, usage(5)]]) }])).toBe(0);

  tollgate = await startTollgate({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url });
  const upgraded = tollgate.output.map((l) => (l.startsWith('{') ? JSON.parse(l) : {})).find((l) => l.msg?.startsWith('embedded database upgraded from PGlite to SQLite'));
  expect(upgraded).toMatchObject({ dataDir, rows: { api_keys: 2, rate_limit_plans: 2, audit_log: 3, admin_tokens: 1 }, pgliteKeptAt: expect.stringContaining('pglite-upgraded-') });

  const detail = await tollgate.admin('GET', `/consumer-api-key/${id}`);
  expect(detail.status).toBe(200);
  expect(detail.body).toMatchObject({ secret: written.key.secret, rateLimitId: written.planId, externalId: 'cus_42', metadata: { tier: 'gold', n: 1 } });
  const counted = await waitFor(() => totalOn(tollgate!, id), (n) => n === written.requests + 5, { timeoutMs: 10_000 });
  expect(counted.value).toBe(written.requests + 5);

  expect(await hit(tollgate, written.key.secret, '/v1/after-upgrade')).toBe(200);
  expect(await hit(tollgate, written.key.previousSecret, '/v1/after-upgrade')).toBe(200);
  const asToken = await fetch(`${tollgate.url}/consumer-api-key/${id}`, { headers: { authorization: `Bearer ${written.adminToken}` } });
  expect(asToken.status).toBe(200);
  await asToken.arrayBuffer();
  expect(await tollgate.stop()).toBe(0);

  tollgate = await startTollgate({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url });
  expect(tollgate.output.some((l) => l.includes('upgraded from PGlite'))).toBe(false);
  expect(await totalOn(tollgate, id)).toBe(written.requests + 5 + 2);
  expect(readdirSync(dataDir).filter((f) => f.startsWith('pglite'))).toEqual([expect.stringMatching(/^pglite-upgraded-/)]);
}, 180_000);
