/**
 * Webhooks across replicas of the built server (Redis mode, a private Postgres and a private Redis):
 * the replica delivering is SIGKILLed mid-delivery, Postgres and Redis are restarted under pending
 * deliveries, and a real receiver that verifies with the standardwebhooks library and dedupes by
 * webhook-id still sees every event exactly once.
 */
import { RedisServer } from '../helpers/redis-server.js';
import { testKeyPrefix } from '../helpers/services.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { PostgresServer } from './helpers/postgres-server.js';
import { pidOwningLocalPort, Replicas, sleep, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let postgres: PostgresServer;
let redis: RedisServer;
let replicas: Replicas;
let receiver: WebhookReceiver;
/** The replicas still running. */
let live: Tollgate[];

beforeAll(async () => {
  [backend, postgres, redis, receiver] = await Promise.all([
    startBackend(),
    PostgresServer.start(),
    RedisServer.start(),
    WebhookReceiver.start(),
  ]);
  const url = await postgres.createDatabase('tollgate');
  replicas = new Replicas({
    DATABASE_URL: url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
  });
  live = await replicas.start(2);
  const hook = await live[0]!.admin('POST', '/tollgate/webhooks', {
    url: receiver.url,
    events: ['key.created', 'key.updated', 'key.rolled', 'key.deleted', 'key.expiring'],
  });
  expect(hook.status).toBe(201);
  receiver.secret = hook.body.secret;
}, 120_000);

afterAll(async () => {
  await replicas?.stopAll();
  await Promise.all([backend?.close(), receiver?.close(), postgres?.destroy(), redis?.destroy()]);
  expectNoSecretsLogged();
}, 60_000);

/** Every event the receiver kept once verified and answered, by type, with its key. */
const received = () =>
  [...receiver.events.values()].map((e) => `${e.type} ${String(e.data.consumerApiKeyId)}`).sort();

it('delivers every event once after dedupe when the delivering replica is SIGKILLed mid-delivery', async () => {
  let killed = false;
  // Every attempt hangs until the replica sending it is dead; from then on the receiver answers 200.
  receiver.answer = () => (killed ? 200 : 'hang');
  const [a, b] = live as [Tollgate, Tollgate];
  const key = (await a.admin('POST', '/consumer-api-key/create', { name: 'mid-delivery' })).body;
  expect((await b.admin('PATCH', `/consumer-api-key/${key.id}`, { name: 'renamed' })).status).toBe(200);
  expect((await a.admin('POST', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 0 })).status).toBe(
    200,
  );
  expect((await b.admin('DELETE', `/consumer-api-key/${key.id}`)).status).toBe(200);
  const expiring = (
    await b.admin('POST', '/consumer-api-key/create', {
      name: 'expiring',
      expiresAt: new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 19) + 'Z',
    })
  ).body;

  await waitFor(
    async () => receiver.attempts.length,
    (n) => n >= 1,
    { timeoutMs: 15_000 },
  );
  const sender = pidOwningLocalPort(
    receiver.attempts[0]!.remotePort,
    live.map((t) => t.process.pid!),
  );
  const victim = live.find((t) => t.process.pid === sender)!;
  expect(victim).toBeDefined();
  victim.process.kill('SIGKILL');
  await new Promise((resolve) => victim.process.once('exit', resolve));
  killed = true;
  const hung = receiver.attempts.map((attempt) => attempt.id);
  live = live.filter((t) => t !== victim);

  // The survivor takes the lease over once it expires, sends what the dead replica had claimed once
  // the claims expire, and (as the new holder) the 7-day notice of the expiring key.
  const expected = [
    `key.created ${key.id}`,
    `key.updated ${key.id}`,
    `key.rolled ${key.id}`,
    `key.deleted ${key.id}`,
    `key.created ${expiring.id}`,
    `key.expiring ${expiring.id}`,
  ].sort();
  const { ms } = await waitFor(
    async () => received(),
    (events) => events.length >= expected.length,
    { timeoutMs: 60_000, everyMs: 200 },
  );
  console.log(
    `webhooks: ${hung.length} deliveries hung in the killed replica, all delivered by the survivor ${Math.round(ms / 1000)} s after the kill`,
  );
  expect(received()).toEqual(expected);
  expect(receiver.attempts.every((attempt) => attempt.verified)).toBe(true);
  for (const id of hung) {
    const attempts = receiver.attemptsOf(id);
    // The same event again: the same webhook-id and the same body, signed anew.
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(new Set(attempts.map((attempt) => attempt.body)).size).toBe(1);
  }
  const [webhook] = (await live[0]!.admin('GET', '/tollgate/webhooks')).body.webhooks;
  const log = await waitFor(
    async () =>
      (await live[0]!.admin('GET', `/tollgate/webhooks/${webhook.id}/deliveries`)).body.deliveries as {
        state: string;
        eventId: string;
      }[],
    (deliveries) => deliveries.every((d) => d.state === 'delivered'),
  );
  expect(log.value.map((d) => d.eventId).sort()).toEqual([...receiver.events.keys()].sort());
}, 120_000);

it('keeps pending deliveries through restarts of Postgres, of Redis and of a replica, and delivers them after', async () => {
  const before = receiver.events.size;
  receiver.answer = () => 503;
  const [survivor] = live as [Tollgate];
  const created: string[] = [];
  for (let i = 0; i < 3; i++)
    created.push(
      (await survivor.admin('POST', '/consumer-api-key/create', { name: `through-restarts-${i}` })).body
        .id as string,
    );
  await waitFor(
    async () => new Set(receiver.attempts.filter((a) => a.answer === 503).map((a) => a.id)).size,
    (n) => n === 3,
    { timeoutMs: 15_000 },
  );

  await postgres.stop();
  await redis.stop();
  await sleep(2_000);
  await postgres.restart();
  await redis.restart();
  // A replica restarted too: the one running stops, a new one starts and takes the lease.
  expect(await survivor.stop()).toBe(0);
  live = await replicas.start(1);
  receiver.answer = () => 200;

  await waitFor(
    async () => receiver.events.size,
    (n) => n === before + 3,
    { timeoutMs: 60_000, everyMs: 200 },
  );
  expect(received().filter((e) => created.some((id) => e.endsWith(id)))).toEqual(
    created.map((id) => `key.created ${id}`).sort(),
  );
  expect(receiver.attempts.every((attempt) => attempt.verified)).toBe(true);
}, 120_000);
