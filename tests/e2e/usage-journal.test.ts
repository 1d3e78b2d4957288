/**
 * Single node on a private Postgres (initdb) stopped under load (two dozen clients at once): SIGTERM
 * keeps the usage it cannot write in DATA_DIR's journal; the next start applies it, once, when
 * Postgres answers again: the total equals, exactly, the responses clients received, and so does the
 * series of the route they took.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { PostgresServer } from './helpers/postgres-server.js';
import { load, sleep, totalOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';
import { heldInJournal, journalEmptied } from './helpers/usage-journal.js';

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

it('keeps the usage of a database stopped under load across SIGTERM and applies it once at the next start', async () => {
  let tollgate = await start();
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'journaled' });
  const route = { routeId: 'loaded', match: { pathPrefix: '/v1/load' }, upstreamUrl: backend.url };
  expect((await tollgate.admin('POST', '/tollgate/routes', route)).status).toBe(201);
  await sleep(1_000); // in force within a second
  let stopping = false;
  const traffic = load(tollgate, key.secret, 24, () => stopping);
  await sleep(1_500); // under load, part of it written to Postgres
  await postgres.stop();
  await sleep(2_000); // under load with Postgres gone: usage waits in memory
  // Over a hundred answered before the SIGTERM, however slow a loaded machine makes the load.
  await waitFor(
    () => Promise.resolve(traffic.answered()),
    (n) => n > 100,
    { timeoutMs: 30_000, what: 'over a hundred requests answered' },
  );
  const before = traffic.answered();
  // SIGTERM while requests are in flight: they finish (and count), the listener refuses the rest.
  const exited = tollgate.stop();
  await sleep(500);
  stopping = true;
  await traffic.done;
  // A failure shows how the shutdown ended (the log's last lines), not only its exit code.
  const code = await exited;
  expect({ exitCode: code, ...(code !== 0 && { log: tollgate.output.slice(-15) }) }).toEqual({ exitCode: 0 });
  const answered = traffic.answered();
  expect(before).toBeGreaterThan(100);
  const kept = tollgate.output
    .map((l) => (l.startsWith('{') ? JSON.parse(l) : {}))
    .find((l) => l.msg === 'usage kept in the journal until the next start');
  expect(kept?.requests).toBeGreaterThan(0);
  expect(tollgate.output.some((l) => l.includes('usage could not be written before exit'))).toBe(false);
  const stopped = tollgate;

  await postgres.restart();
  tollgate = await start();
  // Every answered request counted, none twice. A failure shows what each process logged last.
  await waitFor(
    async () => ({
      counted: await totalOn(tollgate, key.id),
      kept: kept.requests,
      stoppedLog: stopped.output.slice(-10),
      startedLog: tollgate.output.slice(-10),
    }),
    ({ counted }) => counted === answered,
    { timeoutMs: 10_000, what: `the ${answered} answered requests counted` },
  );
  const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19) + 'Z';
  const byRoute = await tollgate.admin(
    'GET',
    `/consumer-api-key/${key.id}/usage?granularity=day&from=${from}&groupBy=route`,
  );
  expect(
    (byRoute.body.series as { routeId: string | null; buckets: { requests: number }[] }[]).map((s) => [
      s.routeId,
      s.buckets.reduce((n, b) => n + b.requests, 0),
    ]),
  ).toEqual([['loaded', answered]]);

  // Applied once: another restart finds nothing left in the journal to apply (a start shows what it
  // holds at once, applied or not yet).
  await journalEmptied(env.DATA_DIR!);
  expect(await tollgate.stop()).toBe(0);
  expect(heldInJournal(env.DATA_DIR!)).toEqual([]);
  tollgate = await start();
  expect(await totalOn(tollgate, key.id)).toBe(answered);
}, 120_000);
