/**
 * Single node on a private Postgres (initdb) stopped under load: SIGTERM keeps the usage it cannot
 * write in DATA_DIR's journal; the next start applies it, once, when Postgres answers again.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { PostgresServer } from './helpers/postgres-server.js';
import { hit, sleep, totalOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let postgres: PostgresServer;
let env: Record<string, string>;
const started: Tollgate[] = [];

beforeAll(async () => {
  [backend, postgres] = await Promise.all([startBackend(), PostgresServer.start()]);
  env = {
    DATABASE_URL: await postgres.createDatabase('tollgate'),
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    ROOT_TOKEN: 'root-' + randomBytes(16).toString('hex'),
    DATA_DIR: mkdtempSync(join(tmpdir(), 'tollgate-journal-')),
    UPSTREAM_URL: backend.url,
    SHUTDOWN_TIMEOUT_MS: '2000',
  };
}, 60_000);

afterAll(async () => {
  await Promise.all(started.map((t) => t.stop()));
  await backend?.close();
  await postgres?.destroy();
  if (started.length > 0) expectNoSecretsLogged();
}, 60_000);

async function start(): Promise<Tollgate> {
  const t = await startTollgate(env);
  started.push(t);
  return t;
}

it('keeps the usage of a stopped database across SIGTERM and applies it once at the next start', async () => {
  let tollgate = await start();
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'journaled' });
  for (let i = 0; i < 3; i++) expect(await hit(tollgate, key.secret, '/v1/before')).toBe(200);
  await sleep(1_500); // written to Postgres

  await postgres.stop();
  const during = 20;
  for (let i = 0; i < during; i++) expect(await hit(tollgate, key.secret, '/v1/during')).toBe(200);
  expect(await tollgate.stop()).toBe(0);
  const kept = tollgate.output.map((l) => (l.startsWith('{') ? JSON.parse(l) : {})).find((l) => l.msg === 'usage kept in the journal until the next start');
  expect(kept).toMatchObject({ requests: during });
  expect(tollgate.output.some((l) => l.includes('usage could not be written before exit'))).toBe(false);

  await postgres.restart();
  tollgate = await start();
  const counted = await waitFor(() => totalOn(tollgate, key.id), (n) => n === 3 + during, { timeoutMs: 10_000 });
  expect(counted.value).toBe(3 + during);

  // Applied once: another restart finds nothing left to apply.
  expect(await tollgate.stop()).toBe(0);
  tollgate = await start();
  await sleep(1_500);
  expect(await totalOn(tollgate, key.id)).toBe(3 + during);
}, 120_000);
