/**
 * Every event type the built server produces beside the key events, delivered signed to a real receiver
 * that verifies with the standardwebhooks library, in both modes (embedded, Redis + Postgres):
 * `consumer.*` from the management API, `quota.threshold` from the limiter, `usage.exported` from a
 * billing export. The receiver refuses each event's first attempt: the retry carries the same
 * webhook-id and body, newly signed. (`credits.*`: tests/integration/credit-events.test.ts, until
 * balances can be set through the API.)
 */
import { randomBytes } from 'node:crypto';
import { BillingReceiver } from '../helpers/billing-receivers.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { MODES } from './helpers/modes.js';
import { hit, keyWithPlan, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const EVENTS = [
  'consumer.created',
  'consumer.updated',
  'consumer.deleted',
  'quota.threshold',
  'usage.exported',
];

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend();
});
afterAll(async () => {
  await backend?.close();
  expectNoSecretsLogged();
});

describe.each(MODES)('events delivered, $name', (mode) => {
  let tollgate: Tollgate;
  let receiver: WebhookReceiver;
  let billing: BillingReceiver;
  let dispose: () => Promise<void>;
  const clock = new TestClock();

  beforeAll(async () => {
    const deployment = await mode.deploy();
    dispose = () => deployment.dispose();
    [receiver, billing] = await Promise.all([
      WebhookReceiver.start(),
      BillingReceiver.start('cloudevents', 'secret-billing-' + randomBytes(12).toString('hex')),
    ]);
    tollgate = await startTollgate({
      ...deployment.env,
      UPSTREAM_URL: backend.url,
      BILLING_EXPORT_RUN_SECONDS: '1',
      BILLING_EXPORT_SETTLE_SECONDS: '1',
      ...clock.env,
    });
  }, 60_000);

  afterAll(async () => {
    await tollgate?.stop();
    await Promise.all([receiver?.close(), billing?.close()]);
    await dispose?.();
  }, 60_000);

  it('delivers consumer.*, quota.threshold and usage.exported signed, each again with the same webhook-id after a refusal', async () => {
    // Every event's first attempt is refused: the retry (about 5 s later) is the one kept.
    receiver.answer = (attempt) => (attempt === 1 ? 500 : 204);
    const hook = await tollgate.admin('POST', '/tollgate/webhooks', { url: receiver.url, events: EVENTS });
    expect(hook.status).toBe(201);
    receiver.secret = hook.body.secret;
    const deliveries = async () =>
      (await tollgate.admin('GET', `/tollgate/webhooks/${hook.body.id}/deliveries?limit=100`)).body
        .deliveries as { state: string; nextAttemptAt: string | null }[];
    const exportCreated = await tollgate.admin('POST', '/tollgate/billing-exports', {
      type: 'cloudevents',
      url: billing.url,
      credential: billing.credential,
      eventName: 'api_requests',
      interval: 'minute',
      subject: 'key',
    });
    expect(exportCreated.status).toBe(201);

    const consumer = await tollgate.admin('POST', '/tollgate/consumers', {
      name: 'acme',
      externalId: 'cus_acme',
    });
    expect(consumer.status).toBe(201);
    const consumerId = consumer.body.consumerId as string;
    expect(
      (await tollgate.admin('PATCH', `/tollgate/consumers/${consumerId}`, { name: 'Acme' })).status,
    ).toBe(200);
    expect((await tollgate.admin('DELETE', `/tollgate/consumers/${consumerId}`)).status).toBe(200);

    // The three consumer events are delivered at their second attempt before the clock moves: an
    // attempt recorded after a move finds the 5 s and 30 s slots past (its retry at 2 min), and one in
    // flight across it outlives its claim and is sent again.
    await waitFor(deliveries, (list) => list.length === 3 && list.every((d) => d.state === 'delivered'), {
      timeoutMs: 60_000,
      what: 'the consumer events delivered before the clock moves',
    });
    // Ten requests fill an hour's limit of 10 (not across an hour's end, nor a minute's: one bucket).
    clock.after(MINUTE_MS, 500);
    const key = await keyWithPlan(tollgate, 'metered', 10, 'hour');
    expect(
      (await tollgate.admin('PATCH', `/consumer-api-key/${key.id}`, { externalId: 'cus_metered' })).status,
    ).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push(await hit(tollgate, key.secret));
    expect(statuses).toEqual([...Array<number>(10).fill(200), 429]);
    const sentAt = clock.now();

    // The five events so far are delivered at their second attempt (about 5 s after the first, or 30 s
    // when a loaded machine recorded the first after the 5 s slot had passed) and recorded before the
    // clock moves: a delivery in flight across the move would outlive its claim and
    // be sent again. By then the usage is stored (written every second; in Redis mode moved to Postgres
    // every second); the minute closes (its end plus 1 s), the export sends it, and its delivery is told.
    await waitFor(deliveries, (list) => list.length === 5 && list.every((d) => d.state === 'delivered'), {
      timeoutMs: 60_000,
      what: 'the five deliveries before the export delivered',
    });
    clock.after(MINUTE_MS, 1_500);
    const { value: kept } = await waitFor(
      async () => EVENTS.map((type) => receiver.ofType(type).length),
      (counts) => counts.every((n) => n > 0) && counts[3] === 2,
      { timeoutMs: 30_000, everyMs: 250 },
    );
    expect(kept).toEqual([1, 1, 1, 2, 1]);
    // Nothing more comes: the webhook's log holds one delivery per event, each delivered, none waiting
    // for another attempt.
    const { value: log } = await waitFor(
      deliveries,
      (list) => list.length === 6 && list.every((d) => d.state === 'delivered'),
      { what: 'the six deliveries delivered' },
    );
    expect(log.map((d) => d.nextAttemptAt)).toEqual(Array(6).fill(null));
    expect(EVENTS.map((type) => receiver.ofType(type).length)).toEqual([1, 1, 1, 2, 1]);

    expect(receiver.attempts.every((a) => a.verified)).toBe(true);
    for (const id of receiver.events.keys()) {
      const attempts = receiver.attemptsOf(id);
      expect(attempts.map((a) => a.answer)).toEqual([500, 204]);
      expect(attempts[1]!.body).toBe(attempts[0]!.body);
    }

    expect(receiver.ofType('consumer.created')[0]!.data).toMatchObject({
      consumerId,
      name: 'acme',
      externalId: 'cus_acme',
    });
    expect(receiver.ofType('consumer.updated')[0]!.data).toMatchObject({
      consumerId,
      name: 'Acme',
      previous: expect.objectContaining({ name: 'acme' }),
    });
    expect(receiver.ofType('consumer.deleted')[0]!.data).toMatchObject({ consumerId, name: 'Acme' });

    const thresholds = receiver.ofType('quota.threshold').map((e) => e.data);
    const hourStart = new Date(Math.floor(sentAt / 3_600_000) * 3_600_000);
    expect(thresholds.sort((x, y) => Number(x.threshold) - Number(y.threshold))).toEqual(
      [80, 100].map((threshold) => ({
        consumerApiKeyId: key.id,
        scope: 'key',
        limit: { name: 'hour', period: 'hour', limit: 10, algorithm: 'fixed' },
        window: {
          start: hourStart.toISOString().slice(0, 19) + 'Z',
          end: new Date(hourStart.getTime() + 3_600_000).toISOString().slice(0, 19) + 'Z',
        },
        threshold,
      })),
    );

    const [exported] = receiver.ofType('usage.exported');
    const minuteStart = Math.floor(sentAt / 60_000) * 60_000;
    expect(exported!.data).toEqual({
      exportId: exportCreated.body.id,
      exportType: 'cloudevents',
      eventName: 'api_requests',
      interval: 'minute',
      subject: 'key',
      consumerApiKeyId: key.id,
      customer: 'cus_metered',
      bucket: {
        start: new Date(minuteStart).toISOString().slice(0, 19) + 'Z',
        end: new Date(minuteStart + 60_000).toISOString().slice(0, 19) + 'Z',
      },
      revision: 1,
      value: 10,
      idempotencyId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    // What was told is what the receiver holds, under the same id; the credential is in no event.
    expect(billing.totals()).toEqual({ cus_metered: 10 });
    expect(billing.events().map((e) => e.id)).toEqual([exported!.data.idempotencyId]);
    expect(receiver.attempts.some((a) => a.body.includes(billing.credential!))).toBe(false);
  }, 150_000);
});
