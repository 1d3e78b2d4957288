/**
 * Embedded mode exports too: the built server with nothing configured (SQLite in DATA_DIR, one
 * process, which always holds the lease) sends a key's usage by the minute to a CloudEvents receiver,
 * exactly what it stored, and stops on SIGTERM with a clean exit.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BillingReceiver } from '../helpers/billing-receivers.js';
import { storedMinuteRequests } from '../helpers/stored-usage.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let receiver: BillingReceiver;
let tollgate: Tollgate;
const clock = new TestClock();
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-export-embedded-'));

beforeAll(async () => {
  backend = await startBackend();
  receiver = await BillingReceiver.start(
    'cloudevents',
    'secret-cloudevents-' + randomBytes(12).toString('hex'),
  );
  tollgate = await startTollgate({
    UPSTREAM_URL: backend.url,
    DATA_DIR: dataDir,
    BILLING_EXPORT_RUN_SECONDS: '1',
    BILLING_EXPORT_SETTLE_SECONDS: '1',
    ...clock.env,
  });
}, 60_000);

afterAll(async () => {
  await tollgate?.stop();
  await Promise.all([backend?.close(), receiver?.close()]);
  expectNoSecretsLogged();
});

it('sends every closed minute of a key to the receiver, exactly as stored, and stops on SIGTERM', async () => {
  const created = await tollgate.admin('POST', '/tollgate/billing-exports', {
    type: 'cloudevents',
    url: receiver.url,
    credential: receiver.credential,
    eventName: 'api_requests',
    interval: 'minute',
    subject: 'key',
  });
  expect(created.status).toBe(201);
  const key = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: 'embedded',
    externalId: 'cus_embedded',
  });
  for (let i = 0; i < 40; i++) expect(await hit(tollgate, key.body.secret)).toBe(200);
  // The export reads only what reached the buckets: the key's detail counts what is still in memory.
  const stored = await waitFor(
    () => storedMinuteRequests({ dataDir }, [key.body.id]),
    (n) => n === 40,
  );
  expect(stored.value).toBe(40);
  // The minute closes at its end plus 1 s; the next run (every second) sends it.
  clock.after(MINUTE_MS, 1_500);
  const exported = await waitFor(
    async () => receiver.totals(),
    (t) => t.cus_embedded === 40,
    { timeoutMs: 10_000, everyMs: 200 },
  );
  console.log(`embedded mode: exported ${exported.value.cus_embedded} units vs ${stored.value} stored`);
  expect(exported.value).toEqual({ cus_embedded: 40 });
  const runs = await tollgate.admin('GET', `/tollgate/billing-exports/${created.body.id}/runs`);
  // One send per minute the requests fell in (two if they straddled a minute's end), each taken at once.
  const sends = runs.body.runs.flatMap((r: { sends: { value: number }[] }) => r.sends);
  expect(sends.reduce((n: number, s: { value: number }) => n + s.value, 0)).toBe(40);
  for (const send of sends)
    expect(send).toMatchObject({ revision: 1, status: 202, delivered: true, customer: 'cus_embedded' });
  expect(await tollgate.stop()).toBe(0);
}, 120_000);
