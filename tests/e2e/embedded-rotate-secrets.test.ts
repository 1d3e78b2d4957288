/**
 * `npm run rotate-secrets` on the embedded store: refused while a server holds DATA_DIR; with the server
 * stopped, every stored secret is re-sealed with the new key (the generated key file of DATA_DIR being
 * the old one), the next start with only the new key serves every key as before, and a start with only
 * the old key is refused.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit } from './helpers/replicas.js';
import { expectNoSecretsLogged, runCommand, startTollgate, type Tollgate } from './helpers/tollgate.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-rotate-'));
const ROOT_TOKEN = 'root-' + randomBytes(16).toString('hex');
const NEW_KEY = randomBytes(32).toString('base64');
let backend: Backend;
const started: Tollgate[] = [];

const rotate = (env: Record<string, string>) => runCommand('rotate-secrets', { DATA_DIR: dataDir, ...env });

async function start(env: Record<string, string> = {}): Promise<Tollgate> {
  const t = await startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN, UPSTREAM_URL: backend.url, ...env });
  started.push(t);
  return t;
}

beforeAll(async () => {
  backend = await startBackend();
}, 60_000);

afterAll(async () => {
  await Promise.all(started.map((t) => t.stop()));
  await backend?.close();
  rmSync(dataDir, { recursive: true, force: true });
  expectNoSecretsLogged();
}, 60_000);

it('re-seals every secret with the new key once the server is stopped; only the new key opens them then', async () => {
  const first = await start();
  const keys: { id: string; secret: string }[] = [];
  for (let i = 0; i < 3; i++)
    keys.push((await first.admin('POST', '/consumer-api-key/create', { name: `k${i}` })).body);
  const generated = readFileSync(join(dataDir, 'secret-encryption.key'), 'utf8').trim();

  const whileServing = await rotate({
    SECRET_ENCRYPTION_KEY: NEW_KEY,
    SECRET_ENCRYPTION_KEY_PREVIOUS: generated,
  });
  expect(whileServing.code).toBe(1);
  expect(whileServing.output).toContain(`DATA_DIR ${dataDir} is in use by process ${first.process.pid}`);
  expect(await first.stop()).toBe(0);

  const rotated = await rotate({ SECRET_ENCRYPTION_KEY: NEW_KEY, SECRET_ENCRYPTION_KEY_PREVIOUS: generated });
  expect(rotated).toEqual({ code: 0, output: 're-encrypted 3 secrets with the new SECRET_ENCRYPTION_KEY\n' });

  const withNewKey = await start({ SECRET_ENCRYPTION_KEY: NEW_KEY });
  for (const key of keys) {
    expect((await withNewKey.admin('GET', `/consumer-api-key/${key.id}`)).body.secret).toBe(key.secret);
    expect(await hit(withNewKey, key.secret)).toBe(200);
  }
  expect(await withNewKey.stop()).toBe(0);

  const withOldKey = await start().then(
    () => 'started',
    (err: Error) => err.message,
  );
  expect(withOldKey).toContain('SECRET_ENCRYPTION_KEY: does not decrypt the stored secrets');
}, 120_000);
