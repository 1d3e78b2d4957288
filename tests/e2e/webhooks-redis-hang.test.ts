/**
 * Webhooks while Redis hangs (docs/guides/operations.md, Faults; docs/guides/webhooks.md): two replicas of the built server on Postgres and a
 * private redis-server that is SIGSTOPped for 20 s while traffic flows through both. The outbox and its
 * delivery lease live in the database, so events of changes made during the hang, and quota thresholds
 * noticed by a replica limiting in process meanwhile, are delivered signed before Redis answers again.
 */
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { RedisServer } from '../helpers/redis-server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, keyWithPlan, Replicas, sleep, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';
import { HOUR_MS, MINUTE_MS, TestClock } from '../helpers/test-clock.js';

/** The replicas' (and the receiver's) clock: moved to the start of an hour rather than waiting for one. */
const clock = new TestClock();

let backend: Backend;
let database: TestDatabase;
let redis: RedisServer;
let replicas: Replicas;
let a: Tollgate;
let b: Tollgate;
let receiver: WebhookReceiver;

beforeAll(async () => {
  // A minute into an hour: the hourly limit of the test fills in one window.
  clock.after(HOUR_MS, MINUTE_MS);
  [backend, database, redis, receiver] = await Promise.all([
    startBackend(),
    createTestDatabase(),
    RedisServer.start(),
    WebhookReceiver.start('/hooks', () => clock.now()),
  ]);
  replicas = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
    ...clock.env,
  });
  [a, b] = (await replicas.start(2)) as [Tollgate, Tollgate];
  const hook = await a.admin('POST', '/tollgate/webhooks', {
    url: receiver.url,
    events: ['key.created', 'consumer.created', 'quota.threshold'],
  });
  expect(hook.status).toBe(201);
  receiver.secret = hook.body.secret;
}, 120_000);

afterAll(async () => {
  redis?.resume();
  await replicas?.stopAll();
  await Promise.all([backend?.close(), receiver?.close(), redis?.destroy(), database?.drop()]);
  expectNoSecretsLogged();
}, 60_000);

it('delivers the events of a Redis hang during the hang, while traffic flows on both replicas', async () => {
  const traffic = await keyWithPlan(a, 'traffic', 1_000_000, 'day');
  const hourly = await keyWithPlan(a, 'hourly', 20, 'hour');
  // Their key.created events, delivered while Redis answers: what came before the hang.
  await waitFor(
    async () => receiver.events.size,
    (n) => n === 2,
  );
  const before = new Set(receiver.events.keys());
  let flowing = true;
  const served: number[] = [0, 0];
  const clients = [a, b].flatMap((t, i) =>
    [0, 1, 2].map(async () => {
      while (flowing) if ((await hit(t, traffic.secret, '/v1/flowing')) === 200) served[i]!++;
    }),
  );
  await sleep(1_000);

  redis.pause();
  const hungAt = Date.now();
  await sleep(1_000); // the replicas find Redis hung and limit in process
  const servedBefore = served.reduce((x, y) => x + y);
  const created = await b.admin('POST', '/consumer-api-key/create', { name: 'made-in-the-hang' });
  expect(created.status).toBe(201);
  const consumer = await a.admin('POST', '/tollgate/consumers', { name: 'made-in-the-hang' });
  expect(consumer.status).toBe(201);
  // Replica b counts the hourly key alone from zero: its 16th request reaches 80 %, its 20th 100 %.
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) statuses.push(await hit(b, hourly.secret));
  expect(statuses).toEqual(Array<number>(20).fill(200));

  await waitFor(
    async () => receiver.events.size,
    (n) => n === before.size + 4,
    { timeoutMs: 17_000, everyMs: 100 },
  );
  const deliveredAfterMs = Date.now() - hungAt;
  const servedDuring = served.reduce((x, y) => x + y) - servedBefore;
  await sleep(Math.max(0, 20_000 - (Date.now() - hungAt)));
  redis.resume();
  flowing = false;
  await Promise.all(clients);

  console.log(
    `Redis hung 20 s: its 4 events delivered ${(deliveredAfterMs / 1000).toFixed(1)} s into it, ${servedDuring} proxied requests served meanwhile`,
  );
  expect(deliveredAfterMs).toBeLessThan(20_000);
  expect(servedDuring).toBeGreaterThan(0);
  const received = [...receiver.events]
    .filter(([id]) => !before.has(id))
    .map(([, e]) =>
      e.type === 'quota.threshold'
        ? `${e.type} ${String(e.data.consumerApiKeyId)} ${String(e.data.threshold)}`
        : `${e.type} ${String(e.data.consumerApiKeyId ?? e.data.consumerId)}`,
    );
  expect(received.sort()).toEqual(
    [
      `key.created ${created.body.id}`,
      `consumer.created ${consumer.body.consumerId}`,
      `quota.threshold ${hourly.id} 80`,
      `quota.threshold ${hourly.id} 100`,
    ].sort(),
  );
  expect(receiver.attempts.every((attempt) => attempt.verified)).toBe(true);
}, 120_000);
