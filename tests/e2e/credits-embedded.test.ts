/**
 * A balance outlives the process that spent it, in embedded mode (SQLite, in-process counters: the
 * database is the only other copy). SIGTERM under load loses nothing: after the restart the balance
 * holds exactly what the answered requests left. SIGKILL at a random moment gives back at most what
 * was spent in its last second (it is saved twice a second), never more, and never takes more than
 * was spent, but for the requests in flight when it died, charged and never answered.
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, sleep } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const BALANCE = 1_000_000;
const CLIENTS = 4;
const KILLS = 3;
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-credits-'));
const rootToken = 'root-credits-' + randomInt(1e9);
let backend: Backend;
let tollgate: Tollgate | undefined;

beforeAll(async () => {
  backend = await startBackend();
}, 60_000);

afterAll(async () => {
  await tollgate?.stop();
  await backend?.close();
  rmSync(dataDir, { recursive: true, force: true });
  expectNoSecretsLogged();
}, 60_000);

const start = () => startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN: rootToken, UPSTREAM_URL: backend.url });

const remainingOf = async (t: Tollgate, keyId: string): Promise<number> =>
  (await t.admin('GET', `/consumer-api-key/${keyId}`)).body.credits.remaining as number;

/** Clients spending `secret` on `t` until it stops answering; the times of the answers that got 200. */
function spendUntilGone(t: Tollgate, secret: string): { answeredAt: number[]; done: Promise<void> } {
  const answeredAt: number[] = [];
  let gone = false;
  const client = async () => {
    while (!gone) {
      const status = await hit(t, secret, '/v1/spend');
      if (status === 200) answeredAt.push(Date.now());
      else if (status === 0) gone = true;
    }
  };
  return { answeredAt, done: Promise.all(Array.from({ length: CLIENTS }, client)).then(() => {}) };
}

const exited = (t: Tollgate) =>
  new Promise((r) =>
    t.process.exitCode !== null || t.process.signalCode !== null ? r(undefined) : t.process.once('exit', r),
  );

it('keeps every credit spent across a SIGTERM under load, and all but its last second across SIGKILLs', async () => {
  tollgate = await start();
  const created = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: 'spender',
    credits: { remaining: BALANCE },
  });
  expect(created.status).toBe(201);
  const { id, secret } = created.body as { id: string; secret: string };
  let spent = 0;

  // SIGTERM while four clients spend: the drain answers what is in flight, then the last spend is saved.
  const load = spendUntilGone(tollgate, secret);
  await sleep(1_500);
  expect(await tollgate.stop()).toBe(0);
  await load.done;
  spent += load.answeredAt.length;
  expect(load.answeredAt.length).toBeGreaterThan(0);
  tollgate = await start();
  expect(await remainingOf(tollgate, id)).toBe(BALANCE - spent);

  for (let round = 0; round < KILLS; round++) {
    const t = tollgate;
    const killed = spendUntilGone(t, secret);
    await sleep(1_200 + randomInt(800));
    const killedAt = Date.now();
    t.process.kill('SIGKILL');
    await killed.done;
    await exited(t);
    const answered = killed.answeredAt.length;
    const lastSecond = killed.answeredAt.filter((at) => at > killedAt - 1_000).length;
    expect(answered).toBeGreaterThan(0);
    spent += answered;

    tollgate = await start();
    const remaining = await remainingOf(tollgate, id);
    // Given back: at most the last second's spending. Taken: at most the requests in flight.
    expect(remaining).toBeGreaterThanOrEqual(BALANCE - spent - CLIENTS);
    expect(remaining).toBeLessThanOrEqual(BALANCE - spent + lastSecond);
    console.log(
      `SIGKILL ${round + 1}: ${answered} answered, ${lastSecond} in its last second, ${remaining - (BALANCE - spent)} given back`,
    );
    // What the restart holds is what is spent from now on.
    spent = BALANCE - remaining;
  }
}, 240_000);
