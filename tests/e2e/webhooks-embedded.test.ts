/**
 * Webhooks from the built server in embedded mode (SQLite in DATA_DIR, no Redis): every key event
 * delivered signed to a real receiver, and an event whose delivery was in flight when the process was
 * SIGKILLed delivered after the restart on the same DATA_DIR, with the same webhook-id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../helpers/poll.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-webhooks-'));
const ROOT_TOKEN = 'root-' + randomBytes(16).toString('hex');
let backend: Backend;
let receiver: WebhookReceiver;
let tollgate: Tollgate;

const start = () => startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN, UPSTREAM_URL: backend.url });

beforeAll(async () => {
  [backend, receiver] = await Promise.all([startBackend(), WebhookReceiver.start()]);
  tollgate = await start();
}, 60_000);

afterAll(async () => {
  await tollgate?.stop();
  await Promise.all([backend?.close(), receiver?.close()]);
  rmSync(dataDir, { recursive: true, force: true });
  expectNoSecretsLogged();
}, 60_000);

it('delivers every key event, and after a SIGKILL mid-delivery and a restart the one in flight, with the same webhook-id', async () => {
  let killed = false;
  // The first delivery hangs until the process sending it is dead; then everything is answered.
  receiver.answer = (attempt) => (killed || attempt > 1 ? 200 : 'hang');
  const hook = await tollgate.admin('POST', '/tollgate/webhooks', {
    url: receiver.url,
    events: ['key.created', 'key.updated', 'key.rolled', 'key.deleted', 'key.expiring'],
  });
  expect(hook.status).toBe(201);
  receiver.secret = hook.body.secret;

  const key = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'embedded' })).body;
  await waitFor(
    async () => receiver.attempts.length,
    (n) => n === 1,
    { timeoutMs: 10_000 },
  );
  // Expiry notices are looked for once a minute by the lease holder, first when it takes the lease: this
  // process did before the key existed, the restarted one will after.
  const expiring = (
    await tollgate.admin('POST', '/consumer-api-key/create', {
      name: 'expiring',
      expiresAt: new Date(Date.now() + 12 * 3_600_000).toISOString().slice(0, 19) + 'Z',
    })
  ).body;
  tollgate.process.kill('SIGKILL');
  await new Promise((resolve) => tollgate.process.once('exit', resolve));
  killed = true;
  const inFlight = receiver.attempts[0]!.id;

  tollgate = await start();
  expect((await tollgate.admin('PATCH', `/consumer-api-key/${key.id}`, { name: 'renamed' })).status).toBe(
    200,
  );
  expect((await tollgate.admin('POST', `/consumer-api-key/${key.id}/roll`)).status).toBe(200);
  expect((await tollgate.admin('DELETE', `/consumer-api-key/${key.id}`)).status).toBe(200);

  const expected = [
    `key.created ${key.id}`,
    `key.updated ${key.id}`,
    `key.rolled ${key.id}`,
    `key.deleted ${key.id}`,
    `key.created ${expiring.id}`,
    `key.expiring ${expiring.id}`,
  ].sort();
  // The restarted process takes the dead one's lease when it expires, and its delivery when the claim does.
  const received = () =>
    [...receiver.events.values()].map((e) => `${e.type} ${String(e.data.consumerApiKeyId)}`).sort();
  await waitFor(
    async () => received(),
    (events) => events.length === expected.length,
    { timeoutMs: 45_000, everyMs: 200 },
  );
  expect(received()).toEqual(expected);
  expect(receiver.attemptsOf(inFlight).map((a) => a.answer)).toEqual(['hang', 200]);
  expect(receiver.attempts.every((a) => a.verified)).toBe(true);
  expect(receiver.ofType('key.expiring')[0]!.data).toMatchObject({
    consumerApiKeyId: expiring.id,
    name: 'expiring',
    daysBefore: 1,
  });
}, 120_000);
