/**
 * `quota.threshold` exactly once per threshold across replicas (docs/guides/webhooks.md): three replicas of the
 * built server on Postgres and a private Redis, clients on every replica hammering one consumer's
 * limit through its keys (leases and reclaims at work), and the same again with Redis restarted empty
 * between the two thresholds. A real receiver that verifies every delivery gets one 80 and one 100 for
 * the window, whichever replicas saw the crossings and however often.
 */
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { RedisServer } from '../helpers/redis-server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, Replicas, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';
import { DAY_MS, MINUTE_MS, TestClock } from '../helpers/test-clock.js';

const LIMIT = 6_000;
/** The replicas' clock: moved to the start of a UTC day, so the file's one window is far from its end. */
const clock = new TestClock();

let backend: Backend;
let database: TestDatabase;
let redis: RedisServer;
let replicas: Replicas;
let fleet: Tollgate[];
let receiver: WebhookReceiver;

beforeAll(async () => {
  // One day's window for the whole file: a minute into a UTC day rather than waiting for one.
  clock.after(DAY_MS, MINUTE_MS);
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
  fleet = await replicas.start(3);
  const hook = await fleet[0]!.admin('POST', '/tollgate/webhooks', {
    url: receiver.url,
    events: ['quota.threshold'],
  });
  expect(hook.status).toBe(201);
  receiver.secret = hook.body.secret;
}, 120_000);

afterAll(async () => {
  await replicas?.stopAll();
  await Promise.all([backend?.close(), receiver?.close(), redis?.destroy(), database?.drop()]);
  expectNoSecretsLogged();
}, 60_000);

/** A consumer bound to a plan of `limit` a day, and `keys` keys of it. */
async function busyConsumer(
  name: string,
  limit = LIMIT,
  keys = 3,
): Promise<{ id: string; secrets: string[] }> {
  const admin = fleet[0]!;
  const planId = `${name}-daily`;
  expect(
    (await admin.admin('POST', '/rate-limit/create', { rateLimitId: planId, limit, period: 'day' })).status,
  ).toBe(201);
  const consumer = await admin.admin('POST', '/tollgate/consumers', { name, rateLimitId: planId });
  expect(consumer.status).toBe(201);
  const secrets: string[] = [];
  for (let k = 0; k < keys; k++) {
    const key = await admin.admin('POST', '/consumer-api-key/create', {
      name: `${name}-${k}`,
      consumerId: consumer.body.consumerId,
    });
    expect(key.status).toBe(201);
    secrets.push(key.body.secret);
  }
  return { id: consumer.body.consumerId, secrets };
}

/**
 * Four clients per replica and key, all at once, each until `enough()` or its first 429; resolves
 * the requests admitted.
 */
async function hammer(
  secrets: readonly string[],
  enough: () => boolean,
  admitted = { n: 0 },
): Promise<number> {
  let full = false;
  const client = async (t: Tollgate, secret: string) => {
    while (!full && !enough()) {
      const status = await hit(t, secret, '/v1/load');
      if (status === 200) admitted.n++;
      else if (status === 429) full = true;
    }
  };
  await Promise.all(
    fleet.flatMap((t) => secrets.flatMap((secret) => [0, 1, 2, 3].map(() => client(t, secret)))),
  );
  return admitted.n;
}

/** The thresholds told of `consumerId`, one line per event: `window start threshold`. */
const told = (consumerId: string) =>
  receiver
    .ofType('quota.threshold')
    .filter((e) => e.data.consumerId === consumerId)
    .map((e) => `${(e.data.window as { start: string }).start} ${String(e.data.threshold)}`)
    .sort();

/**
 * Resolves once every replica has written to the outbox what it noticed until now, and the receiver
 * has what that outbox sent: a consumer of its own (5 a day) crosses both thresholds through that
 * replica alone, and both are told (a replica writes all it noticed at once, the outbox sends in order).
 */
async function noticesWrittenEverywhere(name: string): Promise<void> {
  const markers = await Promise.all(fleet.map((_, i) => busyConsumer(`${name}-marker-${i}`, 5, 1)));
  for (const [i, t] of fleet.entries())
    for (let n = 0; n < 5; n++) expect(await hit(t, markers[i]!.secrets[0]!, '/v1/marker')).toBe(200);
  await waitFor(
    async () => markers.map((m) => told(m.id).length),
    (counts) => counts.every((n) => n === 2),
    { timeoutMs: 15_000, everyMs: 200, what: "both thresholds of each replica's marker told" },
  );
}

const today = () => new Date(Math.floor(clock.now() / DAY_MS) * DAY_MS).toISOString().slice(0, 19) + 'Z';

it('tells 80 % and 100 % once each while clients on three replicas fill a consumer’s limit', async () => {
  const consumer = await busyConsumer('hammered');
  const admitted = await hammer(consumer.secrets, () => false);
  expect(admitted).toBeGreaterThanOrEqual(LIMIT); // exactly LIMIT unless a replica fell back to counting alone
  await waitFor(
    async () => told(consumer.id).length,
    (n) => n === 2,
    { timeoutMs: 15_000, everyMs: 200 },
  );
  // Nothing more goes out once what every replica noticed has reached the outbox and been sent.
  await noticesWrittenEverywhere('hammered');
  expect(told(consumer.id)).toEqual([`${today()} 100`, `${today()} 80`]);
  const event = receiver.ofType('quota.threshold').find((e) => e.data.consumerId === consumer.id);
  expect(event!.data).toMatchObject({
    scope: 'consumer',
    limit: { name: 'day', period: 'day', limit: LIMIT, algorithm: 'fixed' },
  });
  expect(receiver.attempts.every((a) => a.verified)).toBe(true);
}, 120_000);

it('tells each once when Redis restarts empty between the two thresholds', async () => {
  const consumer = await busyConsumer('restarted');
  const admitted = { n: 0 };
  await hammer(consumer.secrets, () => admitted.n >= 0.85 * LIMIT, admitted);
  await waitFor(
    async () => told(consumer.id),
    (lines) => lines.length === 1,
    { timeoutMs: 15_000, everyMs: 200 },
  );
  expect(told(consumer.id)).toEqual([`${today()} 80`]);
  // Redis loses every count; the replicas put back what they had taken of the window, and notice 80 % again.
  await redis.stop();
  await redis.restart();
  await hammer(consumer.secrets, () => false, admitted);
  await waitFor(
    async () => told(consumer.id).length,
    (n) => n === 2,
    { timeoutMs: 15_000, everyMs: 200 },
  );
  await noticesWrittenEverywhere('restarted');
  expect(told(consumer.id)).toEqual([`${today()} 100`, `${today()} 80`]);
  // Beyond LIMIT: what each replica admitted alone while Redis was away (REDIS_FAILURE_MODE=open).
  console.log(
    `Redis restarted at 85 %: ${admitted.n} requests admitted for a limit of ${LIMIT}, one 80 % and one 100 % told`,
  );
}, 120_000);
