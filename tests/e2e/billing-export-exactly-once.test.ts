/**
 * Billing exports are billing data: two built replicas on a private redis-server and Postgres export
 * usage by the minute to real Stripe (v1 and v2 stream), Metronome, OpenMeter, Lago and CloudEvents receivers while clients send
 * requests. Redis hangs for 20 s across a minute's end (the replicas' usage waits, the export closes the
 * minute without it, then sends the rest as a correction); the replica that is exporting is SIGKILLed
 * in the middle of its sends (the other takes the lease over and sends them again under the same ids).
 * Each time, every receiver ends holding exactly the usage stored, to the unit.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { EXPORT_TYPES } from '../../src/billing/billing-export.js';
import { BillingReceiver, type ReceiverType } from '../helpers/billing-receivers.js';
import { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { load, Replicas, sleep, totalOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

const TYPES: readonly ReceiverType[] = EXPORT_TYPES;
const SECRET_PATTERN = /secret-[a-z]+-[0-9a-f]{24}/;

let backend: Backend;
let redis: RedisServer;
let database: TestDatabase;
let deployment: Replicas;
let replicas: Tollgate[];
let db: pg.Client;
const receivers: BillingReceiver[] = [];
/** Every replica's clock: moved to a minute's end rather than waiting for one. */
const clock = new TestClock();

beforeAll(async () => {
  [backend, redis, database] = await Promise.all([startBackend(), RedisServer.start(), createTestDatabase()]);
  deployment = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
    // Every second; a minute is closed 2 s after it ends.
    BILLING_EXPORT_RUN_SECONDS: '1',
    BILLING_EXPORT_SETTLE_SECONDS: '2',
    ...clock.env,
  });
  replicas = await deployment.start(2);
  db = new pg.Client({ connectionString: database.url });
  await db.connect();
}, 120_000);

afterAll(async () => {
  redis?.resume();
  await deployment?.stopAll();
  await db?.end();
  await Promise.all([
    backend?.close(),
    redis?.destroy(),
    database?.drop(),
    ...receivers.map((r) => r.close()),
  ]);
  if (replicas) expectNoSecretsLogged();
  // No credential reached a log line either.
  for (const t of deployment?.all ?? [])
    expect(t.output.filter((line) => SECRET_PATTERN.test(line))).toEqual([]);
}, 60_000);

/** One export per type, by the minute, each to a receiver of its own; returns the receivers and the start of their first bucket. */
async function exportsToEveryType(
  admin: Tollgate,
): Promise<{ targets: Map<ReceiverType, BillingReceiver>; fromMs: number; exportIds: string[] }> {
  const targets = new Map<ReceiverType, BillingReceiver>();
  const exportIds: string[] = [];
  const fromMs = Math.floor(clock.now() / MINUTE_MS) * MINUTE_MS;
  for (const type of TYPES) {
    const credential = `secret-${type}-${randomBytes(12).toString('hex')}`;
    const target = await BillingReceiver.start(type, credential);
    receivers.push(target);
    targets.set(type, target);
    const res = await admin.admin('POST', '/tollgate/billing-exports', {
      type,
      url: target.url,
      credential,
      eventName: 'api_requests',
      interval: 'minute',
      subject: 'key',
    });
    expect(res.status).toBe(201);
    exportIds.push(res.body.id);
  }
  return { targets, fromMs, exportIds };
}

async function keys(
  admin: Tollgate,
  names: readonly string[],
): Promise<{ id: string; secret: string; customer: string }[]> {
  return Promise.all(
    names.map(async (customer) => {
      const res = await admin.admin('POST', '/consumer-api-key/create', {
        name: customer,
        externalId: customer,
      });
      expect(res.status).toBe(201);
      return { id: res.body.id as string, secret: res.body.secret as string, customer };
    }),
  );
}

/** The usage stored by the minute from `fromMs` on, by customer (every key's: an export sends them all). */
async function stored(fromMs: number): Promise<Record<string, number>> {
  const { rows } = await db.query<{ customer: string; units: string }>(
    `select k.external_id as customer, sum(b.requests) as units from usage_buckets b join api_keys k on k.id = b.key_id
     where b.granularity = 'minute' and b.start >= $1 and k.external_id is not null group by k.external_id`,
    [new Date(fromMs)],
  );
  return Object.fromEntries(rows.map((r) => [r.customer, Number(r.units)]));
}

/** Corrections an export planned: sends of a second revision or later. */
async function corrections(exportId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `select count(*) as n from billing_export_sends where revision > 1 and export_id = $1`,
    [exportId],
  );
  return Number(rows[0]!.n);
}

const sum = (totals: Record<string, number>) => Object.values(totals).reduce((n, v) => n + v, 0);

/**
 * Once the usage of every request is in the buckets (the key details, which add what is still on its
 * way, show no more), waits until every receiver holds as much; returns the stored usage by customer.
 */
async function settle(
  targets: Map<ReceiverType, BillingReceiver>,
  fromMs: number,
  billed: { id: string }[],
): Promise<Record<string, number>> {
  const inBuckets = async () =>
    Number(
      (
        await db.query<{ n: string }>(
          `select coalesce(sum(requests), 0) as n from usage_buckets where granularity = 'minute' and key_id = any($1)`,
          [billed.map((k) => k.id)],
        )
      ).rows[0]!.n,
    );
  const flushed = await waitFor(
    async () => ({
      shown: await Promise.all(billed.map((k) => totalOn(replicas.at(-1)!, k.id))),
      stored: await inBuckets(),
    }),
    ({ shown, stored: s }) =>
      shown.every((v) => v !== undefined) && s === shown.reduce<number>((n, v) => n + v!, 0),
    { timeoutMs: 30_000, everyMs: 500 },
  );
  expect(flushed.value.stored).toBe(flushed.value.shown.reduce<number>((n, v) => n + v!, 0));
  const final = await stored(fromMs);
  // The last minute of traffic closes 2 s after its end.
  clock.after(MINUTE_MS, 2_500);
  await waitFor(
    async () => [...targets.values()].map((t) => sum(t.totals())),
    (sums) => sums.every((n) => n >= sum(final)),
    { timeoutMs: 150_000, everyMs: 1_000 },
  );
  return final;
}

it('Redis hangs 20 s across a minute’s end under load: every receiver holds exactly the stored usage, the late part sent as corrections', async () => {
  const admin = replicas[0]!;
  const { targets, fromMs, exportIds } = await exportsToEveryType(admin);
  const billed = await keys(admin, ['cus_hang_a', 'cus_hang_b']);
  let running = true;
  const loads = billed.flatMap((k) => replicas.map((t) => load(t, k.secret, 2, () => !running)));
  // Pause from :48 of a minute to :08 of the next: the minute closes (at :02) while its last seconds wait in the replicas.
  await sleep(5_000);
  clock.before(MINUTE_MS, 12_000);
  redis.pause();
  await sleep(20_000);
  redis.resume();
  await sleep(3_000);
  running = false;
  await Promise.all(loads.map((l) => l.done));

  const final = await settle(targets, fromMs, billed);
  let fixes = 0;
  for (const [i, type] of TYPES.entries()) {
    const target = targets.get(type)!;
    const corrected = await corrections(exportIds[i]!);
    fixes += corrected;
    console.log(
      `Redis hang 20 s, ${type}: exported ${target.total()} units vs ${sum(final)} stored; ${corrected} corrections; ${target.repeats()} repeated ids`,
    );
    expect(target.totals()).toEqual(final);
    expect(target.formatErrors).toEqual([]);
  }
  // The minute that closed during the hang was sent short, and the rest followed as corrections.
  expect(fixes).toBeGreaterThan(0);
}, 300_000);

it('the exporting replica is SIGKILLed mid-send: the other takes its lease over and every receiver holds exactly the stored usage', async () => {
  const admin = replicas[0]!;
  const { targets, fromMs, exportIds } = await exportsToEveryType(admin);
  // Slow answers: the kill lands while events are taken and their answers not yet heard.
  for (const target of targets.values()) target.answerDelayMs = 400;
  const billed = await keys(admin, ['cus_kill_a', 'cus_kill_b', 'cus_kill_c']);
  let running = true;
  const loads = billed.flatMap((k) => replicas.map((t) => load(t, k.secret, 2, () => !running)));
  // Traffic across a minute's end, then the next minute's sends start.
  clock.before(MINUTE_MS, 3_000);
  await sleep(6_000);
  // The replica holding the lease of an export whose receiver has taken events and not answered yet.
  const sending = await waitFor(
    async () => {
      const { rows } = await db.query<{ id: string; holder: string | null }>(
        `select id, lease_holder as holder from billing_exports where id = any($1)`,
        [exportIds],
      );
      const busy = rows.find(
        (r) => r.holder !== null && targets.get(TYPES[exportIds.indexOf(r.id)]!)!.answering > 0,
      );
      return busy && replicas.find((t) => t.process.pid === Number(busy.holder!.split('/')[1]));
    },
    (victim) => victim !== undefined,
    { timeoutMs: 60_000, everyMs: 20 },
  );
  const victim = sending.value!;
  const inFlight = [...targets.values()].reduce((n, t) => n + t.requests.length, 0);
  victim.process.kill('SIGKILL');
  const survivor = replicas.find((t) => t !== victim)!;
  replicas.splice(replicas.indexOf(victim), 1);
  // Its lease lapses 30 s after its last renewal, by Tollgate's clock: moved there, not waited for.
  clock.advance(30_000);
  // Its clients stop; the survivor's go on a while.
  await sleep(5_000);
  running = false;
  await Promise.all(loads.map((l) => l.done));

  const final = await settle(targets, fromMs, billed);
  for (const [type, target] of targets) {
    console.log(
      `SIGKILL of the exporting replica (${inFlight} requests to receivers before): ${type} exported ${target.total()} units vs ${sum(final)} stored; ${target.repeats()} repeated ids`,
    );
    expect(target.totals()).toEqual(final);
    expect(target.formatErrors).toEqual([]);
  }
  // What the killed replica had sent without hearing the answer went again, under the same ids.
  expect([...targets.values()].reduce((n, t) => n + t.repeats(), 0)).toBeGreaterThan(0);
  expect(survivor.process.exitCode).toBeNull();
}, 300_000);
