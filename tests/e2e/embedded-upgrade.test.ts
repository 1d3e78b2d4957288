/**
 * The built server on a DATA_DIR of the PGlite era (PGlite's folder, the generated encryption key, a
 * usage journal kept at the last SIGTERM): a start is refused with one line naming the command;
 * `upgrade-data-dir` copies it into the SQLite store, and the next start serves on: the key's secret
 * opens with the key file, the previous secret of a roll still works, the admin token authenticates,
 * and the journal's usage is counted exactly once (the batch PGlite had applied is not counted again).
 * A second run of the command has nothing to do. Without PGlite installed (an optional dependency) the
 * command says how to install it.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { EMBEDDED_FILE, PGLITE_FOLDER } from '../../src/store/db.js';
import { UsageJournal } from '../../src/usage/journal.js';
import { emptyBucket, type KeyUsage } from '../../src/usage/usage.js';
import { createPgliteDataDir } from '../helpers/pglite-data-dir.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, totalOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, runCommand, startTollgate, type Tollgate } from './helpers/tollgate.js';

const ROOT = resolve(import.meta.dirname, '../..');
const temporary: string[] = [];
const tempDir = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), name));
  temporary.push(dir);
  return dir;
};
let backend: Backend;
let tollgate: Tollgate | undefined;

const usage = (requests: number): KeyUsage => ({
  endpoints: new Map([
    ['/v1/journal', { requests, successful: requests, failed: 0, totalDurationMs: requests, cost: requests }],
  ]),
  customers: new Map(),
  minutes: new Map([
    [
      Date.UTC(2026, 10, 21, 9, 0),
      {
        ...emptyBucket(),
        requests,
        successful: requests,
        totalDurationMs: requests,
        cost: requests,
        status2xx: requests,
      },
    ],
  ]),
  days: new Map(),
  consumers: new Map(),
});

beforeAll(async () => {
  backend = await startBackend();
}, 60_000);

afterAll(async () => {
  await tollgate?.stop();
  await backend?.close();
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
  expectNoSecretsLogged();
}, 60_000);

it('refuses to start on a PGlite DATA_DIR, naming the command; upgrade-data-dir keeps its secrets, tokens and usage, and the journal counts once', async () => {
  const dataDir = tempDir('tollgate-upgrade-e2e-');
  const written = await createPgliteDataDir(dataDir);
  // The last SIGTERM before the upgrade kept two batches: one PGlite had applied meanwhile, one it had not.
  const journal = new UsageJournal(join(dataDir, 'usage-journal'));
  expect(journal.reserve().missingBytes).toBe(0);
  const { id } = written.key;
  expect(
    journal.save([
      { batchId: written.batchId, batch: new Map([[id, usage(written.requests)]]) },
      { batchId: 'kept-at-exit', batch: new Map([[id, usage(5)]]) },
    ]),
  ).toBe(0);

  const refused = await startTollgate({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url }).then(
    () => 'started',
    (err: Error) => err.message,
  );
  expect(refused.split('\n')).toEqual([
    'Tollgate exited (1) before listening:',
    `tollgate: start-up failed: DATA_DIR ${dataDir} holds the PGlite database of an earlier Tollgate: upgrade it once with ` +
      '`npm run upgrade-data-dir` (in the image: `node dist/src/main.js upgrade-data-dir`), then start again',
  ]);
  expect(existsSync(join(dataDir, EMBEDDED_FILE))).toBe(false);

  const upgraded = await runCommand('upgrade-data-dir', { DATA_DIR: dataDir });
  expect(upgraded.code).toBe(0);
  const [copied, kept] = upgraded.output.trimEnd().split('\n');
  expect(copied).toMatch(new RegExp(`^upgraded DATA_DIR ${dataDir} from PGlite to SQLite; rows copied: `));
  for (const table of ['api_keys 2', 'rate_limit_plans 2', 'audit_log 3', 'admin_tokens 1'])
    expect(copied).toContain(table);
  expect(kept).toMatch(
    new RegExp(
      `^the PGlite folder is kept, unused, at ${dataDir}/pglite-upgraded-\\S+: delete it once you no longer need it$`,
    ),
  );

  tollgate = await startTollgate({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url });
  const detail = await tollgate.admin('GET', `/consumer-api-key/${id}`);
  expect(detail.status).toBe(200);
  expect(detail.body).toMatchObject({
    secret: written.key.secret,
    rateLimitId: written.planId,
    externalId: 'cus_42',
    metadata: { tier: 'gold', n: 1 },
  });
  const counted = await waitFor(
    () => totalOn(tollgate!, id),
    (n) => n === written.requests + 5,
    { timeoutMs: 10_000 },
  );
  expect(counted.value).toBe(written.requests + 5);

  expect(await hit(tollgate, written.key.secret, '/v1/after-upgrade')).toBe(200);
  expect(await hit(tollgate, written.key.previousSecret, '/v1/after-upgrade')).toBe(200);
  const asToken = await fetch(`${tollgate.url}/consumer-api-key/${id}`, {
    headers: { authorization: `Bearer ${written.adminToken}` },
  });
  expect(asToken.status).toBe(200);
  await asToken.arrayBuffer();
  expect(await tollgate.stop()).toBe(0);

  expect(await runCommand('upgrade-data-dir', { DATA_DIR: dataDir })).toEqual({
    code: 0,
    output: `DATA_DIR ${dataDir} holds no PGlite database: nothing to upgrade\n`,
  });
  tollgate = await startTollgate({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url });
  expect(await totalOn(tollgate, id)).toBe(written.requests + 5 + 2);
  expect(readdirSync(dataDir).filter((f) => f.startsWith('pglite'))).toEqual([
    expect.stringMatching(/^pglite-upgraded-/),
  ]);
}, 180_000);

it('says how to install PGlite when the optional dependency was left out, and leaves DATA_DIR as it was', async () => {
  // The built server beside a node_modules that holds every package but PGlite's two.
  const install = tempDir('tollgate-no-pglite-');
  cpSync(join(ROOT, 'dist/src'), join(install, 'dist/src'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(install, 'package.json'));
  mkdirSync(join(install, 'node_modules'));
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name !== '@electric-sql' && name !== 'kysely-pglite-dialect')
      symlinkSync(join(ROOT, 'node_modules', name), join(install, 'node_modules', name));
  }
  const dataDir = tempDir('tollgate-no-pglite-data-');
  mkdirSync(join(dataDir, PGLITE_FOLDER));

  const { code, output } = await runCommand(
    'upgrade-data-dir',
    { DATA_DIR: dataDir },
    join(install, 'dist/src/main.js'),
  );
  expect({ code, output }).toEqual({
    code: 1,
    output:
      'tollgate: upgrade-data-dir failed: PGlite is not installed: it reads the old DATA_DIR, and is an optional dependency ' +
      '(@electric-sql/pglite, kysely-pglite-dialect); install the dependencies without --omit=optional (`npm ci`), then run ' +
      `upgrade-data-dir again (DATA_DIR ${dataDir})\n`,
  });
  expect(readdirSync(dataDir)).toEqual([PGLITE_FOLDER]);
}, 60_000);
