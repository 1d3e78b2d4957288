/**
 * One process per DATA_DIR on the embedded store: a second server on the same folder refuses to start
 * and names the process that holds it, the first serves on untouched; a lock left by a process that
 * was killed is taken over by the next start.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-lock-'));
const ROOT_TOKEN = 'root-' + randomBytes(16).toString('hex');
const started: Tollgate[] = [];

afterAll(async () => {
  await Promise.all(started.map((t) => t.stop()));
  rmSync(dataDir, { recursive: true, force: true });
  expectNoSecretsLogged();
}, 60_000);

it('refuses a second server on the same DATA_DIR, and takes over the lock of a killed one', async () => {
  const first = await startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN });
  started.push(first);
  const { body: key } = await first.admin('POST', '/consumer-api-key/create', { name: 'held' });

  const second = await startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN }).then(
    (t) => {
      started.push(t);
      return 'started';
    },
    (err: Error) => err.message,
  );
  expect(second).toContain(
    `start-up failed: DATA_DIR ${dataDir} is in use by process ${first.process.pid}; embedded mode runs one process per folder`,
  );
  expect((await first.admin('GET', `/consumer-api-key/${key.id}`)).status).toBe(200);

  first.process.kill('SIGKILL');
  await new Promise((r) => first.process.once('exit', r));
  const next = await startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN });
  started.push(next);
  expect((await next.admin('GET', `/consumer-api-key/${key.id}`)).body.name).toBe('held');
}, 60_000);
