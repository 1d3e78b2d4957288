/** SIGTERM as the contract orders it: not ready, no new connections, in-flight requests finish, usage flushed, exit 0. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let tollgate: Tollgate;
const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'tollgate-drain-')), SHUTDOWN_TIMEOUT_MS: '5000' };

beforeAll(async () => {
  backend = await startBackend();
  tollgate = await startTollgate({ ...env, UPSTREAM_URL: backend.url });
});

afterAll(async () => {
  await tollgate?.stop();
  await backend?.close();
});

it('drains: readiness turns 503, a request in flight finishes, new connections are refused, usage survives, exit 0', async () => {
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'drain' });
  const auth = { authorization: `Bearer ${key.secret}` };

  const inFlight = fetch(`${tollgate.url}/slow/1500`, { headers: auth });
  await new Promise((r) => setTimeout(r, 300));
  const exited = new Promise<number | null>((resolve) => tollgate.process.once('exit', resolve));
  tollgate.process.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));

  expect((await fetch(`${tollgate.opsUrl}/readyz`)).status).toBe(503);
  await expect(fetch(`${tollgate.url}/v1/after`, { headers: auth })).rejects.toThrow();
  const slow = await inFlight;
  expect(slow.status).toBe(200);
  expect(await slow.json()).toMatchObject({ url: '/slow/1500' });
  expect(await exited).toBe(0);

  // The drained request was recorded and flushed before exit: the next process on the data shows it.
  tollgate = await startTollgate({ ...env, UPSTREAM_URL: backend.url, ROOT_TOKEN: tollgate.rootToken });
  const detail = await tollgate.admin('GET', `/consumer-api-key/${key.id}`);
  expect(detail.body.usage).toMatchObject({ totalRequests: 1, successfulRequests: 1 });
  expect(detail.body.usage.endpoints).toEqual([expect.objectContaining({ endpoint: '/slow/1500', requests: 1 })]);
});

it('never writes a secret to its logs', () => expectNoSecretsLogged());
