/**
 * Events and webhooks (docs/guides/webhooks.md) on the embedded SQLite store and a real Postgres: the
 * management API in process, the delivery worker with a short retry schedule, and real receivers on
 * 127.0.0.1 that verify every delivery with the Standard Webhooks library and dedupe by webhook-id.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { ExpiryNotices } from '../../src/keys/expiry-notices.js';
import { createManagementApp } from '../../src/management/app.js';
import { LimitNotices } from '../../src/limits/limit-notices.js';
import { NoticeWriter } from '../../src/limits/notice-writer.js';
import { keyExpiringData } from '../../src/management/change-events.js';
import { balanceSet } from '../../src/plans/balance.js';
import { ruleOf } from '../../src/plans/plan.js';
import { isoSeconds, windowAt } from '../../src/plans/window.js';
import { createLogger } from '../../src/ops/logger.js';
import { migrate } from '../../src/store/migrate.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../src/webhooks/delivery-worker.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import {
  managementDeps,
  refuseWrites,
  storedText,
  STORAGES,
  type Storage,
} from '../helpers/management-storage.js';
import { waitFor } from '../helpers/poll.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const ENCRYPTION_KEYS = [randomBytes(32)];
const logger = createLogger('silent');
/**
 * Production backs off 5 s … 24 h; here five steps of 300 ms. A slot already past when an attempt
 * ends is skipped (src/webhooks/retry-schedule.ts), so the gaps are wider than an attempt takes
 * on a loaded machine: tests count the attempts.
 */
const SHORT_SCHEDULE = [300, 600, 900, 1_200, 1_500];
type Method = 'get' | 'post' | 'patch' | 'delete';

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('webhooks on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  const workers: DeliveryWorker[] = [];
  const receivers: WebhookReceiver[] = [];
  /** Every secret handed out: none may appear in an event. */
  const secrets: string[] = [];

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    app = createManagementApp(
      managementDeps(storage.handle.db, { rootToken: ROOT_TOKEN, encryptionKeys: ENCRYPTION_KEYS }),
    );
  }, 60_000);

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
    // Each test's webhooks go with it: the next test's receivers see only their own events.
    for (const webhook of (await call('get', '/tollgate/webhooks')).body.webhooks)
      await call('delete', `/tollgate/webhooks/${webhook.id}`);
  });

  afterAll(() => storage.dispose());

  const call = async (method: Method, path: string, body?: unknown) => {
    const req = request(app)[method](path).set('Authorization', `Bearer ${ROOT_TOKEN}`);
    const res = await (body === undefined ? req : req.send(body as object));
    if (typeof res.body?.secret === 'string') secrets.push(res.body.secret);
    return res;
  };

  function startWorker(options: Partial<DeliveryWorkerOptions> = {}): DeliveryWorker {
    const worker = new DeliveryWorker({
      db: storage.handle.db,
      encryptionKeys: ENCRYPTION_KEYS,
      logger,
      intervalMs: 25,
      retrySchedule: SHORT_SCHEDULE,
      timeoutMs: 1_000,
      expiryNotices: new ExpiryNotices(storage.handle.db, keyExpiringData),
      noticeIntervalMs: 0,
      ...options,
    });
    worker.start();
    workers.push(worker);
    return worker;
  }

  /** A receiver and a webhook that sends `events` to it. */
  async function subscribed(events: string[]): Promise<{ receiver: WebhookReceiver; webhookId: string }> {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    const res = await call('post', '/tollgate/webhooks', { url: receiver.url, events, description: 'test' });
    expect(res.status).toBe(201);
    expect(checker.problems('post', '/tollgate/webhooks', res)).toEqual([]);
    receiver.secret = res.body.secret;
    return { receiver, webhookId: res.body.id };
  }

  async function createKey(body: object = {}): Promise<{ id: string; secret: string }> {
    const res = await call('post', '/consumer-api-key/create', {
      name: `k-${randomBytes(3).toString('hex')}`,
      ...body,
    });
    expect(res.status).toBe(201);
    return res.body;
  }

  const deliveries = async (webhookId: string) => {
    const res = await call('get', `/tollgate/webhooks/${webhookId}/deliveries`);
    expect(checker.problems('get', '/tollgate/webhooks/{webhookId}/deliveries', res)).toEqual([]);
    return res.body.deliveries as {
      id: string;
      eventId: string;
      type: string;
      state: string;
      attempts: number;
      lastStatus: number | null;
      lastError: string | null;
      nextAttemptAt: string | null;
    }[];
  };

  it('delivers every key event, signed, once per webhook-id, with the key as the API shows it and no secret', async () => {
    const { receiver, webhookId } = await subscribed([
      'key.created',
      'key.updated',
      'key.rolled',
      'key.deleted',
      'key.expiring',
    ]);
    startWorker();
    const plan = await call('post', '/rate-limit/create', {
      rateLimitId: `p-${randomBytes(3).toString('hex')}`,
      limit: 5,
      period: 'hour',
    });
    const key = await createKey({ externalId: 'cus_1', metadata: { b: 1, a: 2 } });
    expect((await call('patch', `/consumer-api-key/${key.id}`, { name: 'renamed' })).status).toBe(200);
    expect(
      (
        await call('post', '/api-keys/apply-rate-limit', {
          consumerApiKeyId: key.id,
          rateLimitId: plan.body.rateLimitId,
        })
      ).status,
    ).toBe(200);
    const rolled = await call('post', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 60 });
    expect(rolled.status).toBe(200);
    expect((await call('delete', `/consumer-api-key/${key.id}`)).status).toBe(200);
    const inTwoDays = await createKey({
      expiresAt: new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 19) + 'Z',
    });
    const inTwelveHours = await createKey({
      expiresAt: new Date(Date.now() + 12 * 3_600_000).toISOString().slice(0, 19) + 'Z',
    });

    // Created three times, updated twice (a PATCH, a plan bound), rolled, deleted, two expiry notices.
    await waitFor(
      async () => receiver.events.size,
      (n) => n >= 9,
    );
    await workers[0]!.settled();
    expect(receiver.attempts.every((a) => a.verified)).toBe(true);
    const created = receiver.ofType('key.created').find((e) => e.data.consumerApiKeyId === key.id)!;
    expect(created.data).toEqual({
      consumerApiKeyId: key.id,
      name: expect.any(String),
      enabled: true,
      expiresAt: null,
      externalId: 'cus_1',
      metadata: { b: 1, a: 2 },
      rateLimitId: null,
      consumerId: null,
      allowedRouteIds: null,
      allowedOrigins: null,
      allowedAddresses: null,
    });
    // Metadata keeps the order it was written in, as every answer of the API does.
    expect(receiver.attempts.find((a) => a.body.includes(`"consumerApiKeyId":"${key.id}"`))!.body).toContain(
      '"metadata":{"b":1,"a":2}',
    );
    const updates = receiver.ofType('key.updated').filter((e) => e.data.consumerApiKeyId === key.id);
    expect(
      updates.map((e) => [
        e.data.name,
        e.data.rateLimitId,
        (e.data.previous as Record<string, unknown>).name,
      ]),
    ).toEqual(
      expect.arrayContaining([
        ['renamed', null, expect.any(String)],
        ['renamed', plan.body.rateLimitId, 'renamed'],
      ]),
    );
    expect(receiver.ofType('key.rolled')).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({
          consumerApiKeyId: key.id,
          previousSecretExpiresAt: rolled.body.previousSecretExpiresAt,
        }),
      }),
    ]);
    expect(receiver.ofType('key.deleted')).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({ consumerApiKeyId: key.id, name: 'renamed' }),
      }),
    ]);
    expect(receiver.ofType('key.expiring').map((e) => [e.data.consumerApiKeyId, e.data.daysBefore])).toEqual(
      expect.arrayContaining([
        [inTwoDays.id, 7],
        [inTwelveHours.id, 1],
      ]),
    );
    for (const event of receiver.events.values())
      expect(event.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // Each event was delivered once, and the delivery log names it by the id the receiver saw.
    const log = await deliveries(webhookId);
    expect(log.map((d) => d.eventId).sort()).toEqual([...receiver.events.keys()].sort());
    expect(
      log.every(
        (d) =>
          d.state === 'delivered' && d.attempts === 1 && d.lastStatus === 204 && d.nextAttemptAt === null,
      ),
    ).toBe(true);
    expect(receiver.attempts).toHaveLength(receiver.events.size);

    const bodies =
      receiver.attempts.map((a) => a.body).join('\n') +
      (await storedText(storage.handle.db, 'outbox_events'));
    for (const secret of [...secrets, key.secret, rolled.body.secret]) expect(bodies).not.toContain(secret);
    expect(await storedText(storage.handle.db, 'webhooks')).not.toContain(
      receiver.secret.slice('whsec_'.length),
    );
  });

  it('sends the same webhook-id again to a receiver that answers 500 for a while, then records the 200', async () => {
    const { receiver, webhookId } = await subscribed(['key.created']);
    receiver.answer = (attempt) => (attempt <= 3 ? 500 : 200);
    startWorker();
    await createKey();
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 1,
    );
    const [id] = [...receiver.events.keys()];
    const attempts = receiver.attemptsOf(id!);
    expect(attempts.map((a) => a.answer)).toEqual([500, 500, 500, 200]);
    expect(attempts.every((a) => a.verified && a.body === attempts[0]!.body)).toBe(true);
    expect(receiver.attempts).toHaveLength(4);
    await workers[0]!.settled();
    const [delivery] = await deliveries(webhookId);
    expect(delivery).toMatchObject({
      eventId: id,
      type: 'key.created',
      state: 'delivered',
      attempts: 4,
      lastStatus: 200,
      lastError: null,
      nextAttemptAt: null,
    });
  });

  it('retries a receiver that does not answer in time, and one that closes the connection', async () => {
    const { receiver, webhookId } = await subscribed(['key.created']);
    receiver.answer = (attempt) => (attempt > 1 ? 200 : receiver.attempts.length === 0 ? 'hang' : 'close');
    startWorker({ timeoutMs: 300 });
    await createKey();
    await createKey();
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 2,
      { timeoutMs: 10_000 },
    );
    await workers[0]!.settled();
    expect(receiver.attempts.map((a) => a.answer).sort()).toEqual([200, 200, 'close', 'hang']);
    for (const id of receiver.events.keys()) expect(receiver.attemptsOf(id)).toHaveLength(2);
    expect((await deliveries(webhookId)).map((d) => [d.state, d.attempts, d.lastStatus])).toEqual([
      ['delivered', 2, 200],
      ['delivered', 2, 200],
    ]);
  });

  it('holds nothing of the management API while receivers hang', async () => {
    const { receiver } = await subscribed(['key.created']);
    receiver.answer = () => 'hang';
    const timeoutMs = 5_000;
    startWorker({ timeoutMs });
    for (let i = 0; i < 6; i++) await createKey();
    await waitFor(
      async () => receiver.attempts.length,
      (n) => n === 4,
    );
    // Four sends hang, each waiting on its receiver: no transaction, no connection is held meanwhile,
    // so the calls end before the sends' timeout (what holding one would make them wait for).
    const started = performance.now();
    for (let i = 0; i < 5; i++) {
      expect((await call('get', '/consumer-api-key')).status).toBe(200);
      await createKey();
    }
    expect(performance.now() - started).toBeLessThan(timeoutMs);
  });

  it('shows a failing delivery in the log with its status or error and its next attempt, then fails it when the schedule ends', async () => {
    const { receiver, webhookId } = await subscribed(['key.created']);
    receiver.answer = () => 503;
    startWorker({ retrySchedule: [300, 60_000] });
    await createKey();
    const { value: waiting } = await waitFor(
      () => deliveries(webhookId),
      (log) => log[0]?.attempts === 2,
    );
    expect(waiting[0]).toMatchObject({
      state: 'pending',
      attempts: 2,
      lastStatus: 503,
      lastError: null,
      nextAttemptAt: expect.any(String),
    });
    await workers[0]!.stop();

    const { receiver: closed, webhookId: unreachable } = await subscribed(['key.created']);
    await closed.close();
    startWorker({ retrySchedule: [300] });
    await createKey();
    const { value: failed } = await waitFor(
      () => deliveries(unreachable),
      (log) => log[0]?.state === 'failed',
    );
    expect(failed[0]).toMatchObject({
      state: 'failed',
      attempts: 2,
      lastStatus: null,
      lastError: 'connection refused',
      nextAttemptAt: null,
    });
  });

  it('never delivers an event whose change rolled back', async () => {
    const { receiver } = await subscribed(['key.created']);
    startWorker();
    // The outbox row is written before the audit entry: the refused entry takes it back with the key.
    const lift = await refuseWrites(storage.handle.db, 'refuse_audit', 'audit_log', 'insert');
    const refused = await call('post', '/consumer-api-key/create', { name: 'rolled-back' });
    await lift();
    expect(refused.status).toBeGreaterThanOrEqual(500);
    const kept = await createKey({ name: 'kept' });
    await waitFor(
      async () => receiver.events.size,
      (n) => n >= 1,
    );
    await workers[0]!.runOnce();
    await workers[0]!.settled();
    expect(receiver.ofType('key.created').map((e) => e.data.name)).toEqual(['kept']);
    expect(receiver.ofType('key.created')[0]!.data.consumerApiKeyId).toBe(kept.id);
    expect(await storedText(storage.handle.db, 'outbox_events')).not.toContain('rolled-back');
  });

  it('sends a delivery again on a manual retry, with the same webhook-id, and records the retry', async () => {
    const { receiver, webhookId } = await subscribed(['key.created']);
    startWorker();
    await createKey();
    const { value: log } = await waitFor(
      () => deliveries(webhookId),
      (l) => l[0]?.state === 'delivered',
    );
    const retried = await call('post', `/tollgate/webhooks/${webhookId}/deliveries/${log[0]!.id}/retry`);
    expect(retried.status).toBe(200);
    expect(
      checker.problems('post', '/tollgate/webhooks/{webhookId}/deliveries/{deliveryId}/retry', retried),
    ).toEqual([]);
    expect(retried.body).toMatchObject({ id: log[0]!.id, state: 'pending', attempts: 1 });
    await waitFor(
      async () => receiver.attempts.length,
      (n) => n === 2,
    );
    expect(receiver.attempts.map((a) => a.id)).toEqual([log[0]!.eventId, log[0]!.eventId]);
    expect(receiver.events.size).toBe(1);
    await waitFor(
      () => deliveries(webhookId),
      (l) => l[0]?.state === 'delivered' && l[0].attempts === 2,
    );
    const audit = await call('get', `/tollgate/audit-log?targetId=${webhookId}`);
    expect(audit.body.auditLog.map((e: { action: string }) => e.action)).toEqual([
      'webhook.retry_delivery',
      'webhook.create',
    ]);

    const missing = await call(
      'post',
      `/tollgate/webhooks/${webhookId}/deliveries/dlv_${'A'.repeat(22)}/retry`,
    );
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('delivery_not_found');
  });

  it('disables a webhook none of whose attempts succeeded for the disable period, says so, and records it as done by system', async () => {
    const { receiver, webhookId } = await subscribed(['key.created']);
    receiver.answer = () => 500;
    startWorker({ disableAfterMs: 400, retrySchedule: [300, 600, 900, 1_200, 1_500, 1_800] });
    await createKey();
    const { value: webhook } = await waitFor(
      async () => (await call('get', `/tollgate/webhooks/${webhookId}`)).body,
      (w) => w.enabled === false,
    );
    expect(webhook).toMatchObject({
      enabled: false,
      disabledAt: expect.any(String),
      disabledReason: expect.stringContaining('No delivery succeeded since'),
    });
    const audit = await call('get', '/tollgate/audit-log?actorId=system');
    expect(checker.problems('get', '/tollgate/audit-log', audit)).toEqual([]);
    expect(audit.body.auditLog).toEqual([
      expect.objectContaining({
        actor: { type: 'system' },
        action: 'webhook.disable',
        target: { type: 'webhook', id: webhookId },
        changes: {
          before: expect.objectContaining({ enabled: true }),
          after: expect.objectContaining({ enabled: false }),
        },
      }),
    ]);
    // Root's entries are not Tollgate's.
    expect(
      (await call('get', '/tollgate/audit-log?actorId=root')).body.auditLog.some(
        (e: { action: string }) => e.action === 'webhook.disable',
      ),
    ).toBe(false);

    // Disabled: no new deliveries, and a retry is refused until it is enabled again.
    const attemptsWhenDisabled = receiver.attempts.length;
    await createKey();
    const [pending] = await deliveries(webhookId);
    expect(
      (await call('post', `/tollgate/webhooks/${webhookId}/deliveries/${pending!.id}/retry`)).body.code,
    ).toBe('webhook_disabled');
    await workers[0]!.runOnce();
    await workers[0]!.settled();
    expect(receiver.attempts.length).toBe(attemptsWhenDisabled);
    expect(await deliveries(webhookId)).toHaveLength(1);

    receiver.answer = () => 200;
    const enabled = await call('patch', `/tollgate/webhooks/${webhookId}`, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledAt: null, disabledReason: null });
    await call('post', `/tollgate/webhooks/${webhookId}/deliveries/${pending!.id}/retry`);
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 1,
    );
  });

  it('sends a webhook only the events of its types that happened after it was made', async () => {
    startWorker();
    const before = await createKey({ name: 'before' });
    const { receiver: created } = await subscribed(['key.created']);
    const { receiver: deleted } = await subscribed(['key.deleted']);
    const after = await createKey({ name: 'after' });
    await call('delete', `/consumer-api-key/${before.id}`);
    await waitFor(
      async () => created.events.size + deleted.events.size,
      (n) => n === 2,
    );
    await workers[0]!.runOnce();
    await workers[0]!.settled();
    expect(created.ofType('key.created').map((e) => e.data.consumerApiKeyId)).toEqual([after.id]);
    expect([...deleted.events.values()].map((e) => [e.type, e.data.consumerApiKeyId])).toEqual([
      ['key.deleted', before.id],
    ]);
  });

  it('keeps a busy webhook’s four sends going between ticks: forty events in well under the ten ticks four a tick would take', async () => {
    const { receiver } = await subscribed(['key.created']);
    for (let i = 0; i < 40; i++) await createKey();
    const started = performance.now();
    startWorker({ intervalMs: 1_000 });
    const { value, ms } = await waitFor(
      async () => receiver.events.size,
      (n) => n === 40,
      { timeoutMs: 15_000, everyMs: 20 },
    );
    console.log(`40 events to one webhook in ${Math.round(performance.now() - started)} ms (ticks of 1 s)`);
    expect(value).toBe(40);
    expect(ms).toBeLessThan(5_000);
    expect(receiver.attempts).toHaveLength(40);
  });

  it('lets one worker at a time deliver, and another take over when it stops', async () => {
    const { receiver } = await subscribed(['key.created']);
    const first = startWorker();
    const second = startWorker();
    for (let i = 0; i < 5; i++) await createKey();
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 5,
    );
    await first.stop();
    for (let i = 0; i < 5; i++) await createKey();
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 10,
    );
    await second.runOnce();
    await second.settled();
    // Every event once: neither worker sent what the other had.
    expect(receiver.attempts).toHaveLength(10);
  });

  it('delivers once what three replicas’ limiters noticed, and what the database refused once it takes writes again', async () => {
    const { receiver } = await subscribed(['quota.threshold', 'credits.low']);
    startWorker();
    // A webhook receives what happens after it is made: now.
    const now = Date.now();
    const rule = ruleOf({ limit: 1_000, period: 'hour', name: 'hourly' });
    const window = windowAt('hour', now);
    const balance = balanceSet(0, 100, { amount: 100, interval: 'day', dayOfMonth: 1 }, null, now);
    // Each replica noticed the same two things (a limiter tells each once; replicas do not know of each other).
    const replicas = [0, 1, 2].map(() => {
      const notices = new LimitNotices();
      notices.quotaReached('consumer', 'con_busy', rule, window, 80, now);
      notices.creditsLow('key', 'key_low', balance, balance, 9, 10, now);
      return { notices, writer: new NoticeWriter(storage.handle.db, notices, logger, () => now) };
    });
    // The first replica's write fails (the database refuses outbox writes); the others' succeed.
    const allowWrites = await refuseWrites(storage.handle.db, 'no_outbox', 'outbox_events', 'insert');
    await expect(replicas[0]!.writer.write()).rejects.toThrow(/no_outbox/);
    await allowWrites();
    await Promise.all(replicas.slice(1).map(({ writer }) => writer.write()));
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 2,
    );
    // The refused notices were kept and are written now: the outbox already holds them, so nothing new goes out.
    await replicas[0]!.writer.write();
    expect(replicas[0]!.notices.take(now)).toEqual([]);
    await workers[0]!.runOnce();
    await workers[0]!.settled();
    expect(receiver.attempts.every((a) => a.verified)).toBe(true);
    expect(new Set(receiver.attempts.map((a) => a.id)).size).toBe(2);
    expect(receiver.ofType('quota.threshold').map((e) => e.data)).toEqual([
      {
        consumerId: 'con_busy',
        scope: 'consumer',
        limit: { name: 'hourly', period: 'hour', limit: 1_000, algorithm: 'fixed' },
        window: { start: isoSeconds(window.start), end: isoSeconds(window.end) },
        threshold: 80,
      },
    ]);
    expect(receiver.ofType('credits.low').map((e) => e.data)).toEqual([
      {
        consumerApiKeyId: 'key_low',
        scope: 'key',
        remaining: 9,
        lowAt: 10,
        refill: { amount: 100, interval: 'day', dayOfMonth: 1 },
        resetTime: isoSeconds(windowAt('day', now).end),
      },
    ]);
  });

  it('creates, lists, shows, changes and deletes webhooks, shows the secret once, and refuses what the API documents as refused', async () => {
    const created = await call('post', '/tollgate/webhooks', {
      url: 'http://10.0.0.7:8080/tollgate',
      events: ['key.created', 'quota.threshold'],
    });
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe(`/tollgate/webhooks/${created.body.id}`);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^whk_[A-Za-z0-9_-]{22}$/),
      url: 'http://10.0.0.7:8080/tollgate',
      events: ['key.created', 'quota.threshold'],
      description: '',
      enabled: true,
      disabledAt: null,
      disabledReason: null,
      createdAt: expect.any(String),
      lastUpdated: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const { secret, ...shown } = created.body;
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    const id = created.body.id as string;
    const list = await call('get', '/tollgate/webhooks');
    expect(checker.problems('get', '/tollgate/webhooks', list)).toEqual([]);
    expect(list.body.webhooks).toEqual([shown]);
    expect((await call('get', `/tollgate/webhooks/${id}`)).body).toEqual(shown);

    const changed = await call('patch', `/tollgate/webhooks/${id}`, {
      url: 'https://billing.internal/hook',
      events: ['key.deleted'],
      enabled: false,
      description: 'billing',
    });
    expect(checker.problems('patch', '/tollgate/webhooks/{webhookId}', changed)).toEqual([]);
    expect(changed.body).toMatchObject({
      url: 'https://billing.internal/hook',
      events: ['key.deleted'],
      enabled: false,
      description: 'billing',
      disabledReason: null,
    });
    expect((await call('patch', `/tollgate/webhooks/${id}`, { enabled: false })).status).toBe(200);
    const trail = await call('get', `/tollgate/audit-log?targetId=${id}`);
    expect(trail.body.auditLog.map((e: { action: string }) => e.action)).toEqual([
      'webhook.update',
      'webhook.create',
    ]);
    expect(JSON.stringify(trail.body)).not.toContain(secret.slice('whsec_'.length));

    for (const url of [
      'ftp://files.example/hook',
      'not a url',
      'http://user:pass@hooks.example/x',
      '/relative',
    ]) {
      const refused = await call('post', '/tollgate/webhooks', { url, events: ['key.created'] });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({
        code: 'validation_failed',
        details: [expect.objectContaining({ field: 'url' })],
      });
    }
    for (const events of [[], ['key.exploded'], ['key.created', 'key.created']]) {
      expect(
        (await call('post', '/tollgate/webhooks', { url: 'http://127.0.0.1:1/x', events })).body.code,
      ).toBe('validation_failed');
    }
    expect((await call('patch', `/tollgate/webhooks/${id}`, { url: 'gopher://x' })).body.details).toEqual([
      expect.objectContaining({ field: 'url' }),
    ]);

    const deleted = await call('delete', `/tollgate/webhooks/${id}`);
    expect(deleted.body).toEqual({ id, message: `Webhook ${id} has been deleted` });
    for (const [method, path] of [
      ['get', `/tollgate/webhooks/${id}`],
      ['patch', `/tollgate/webhooks/${id}`],
      ['delete', `/tollgate/webhooks/${id}`],
      ['get', `/tollgate/webhooks/${id}/deliveries`],
    ] as const) {
      const res = await call(method, path, method === 'patch' ? { enabled: true } : undefined);
      expect([res.status, res.body.code]).toEqual([404, 'webhook_not_found']);
    }
  });

  it('pages the delivery log newest first', async () => {
    const { receiver, webhookId } = await subscribed(['key.created']);
    startWorker();
    for (let i = 0; i < 5; i++) await createKey();
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 5,
    );
    await workers[0]!.settled();
    const all = await deliveries(webhookId);
    const first = await call('get', `/tollgate/webhooks/${webhookId}/deliveries?limit=2`);
    const second = await call(
      'get',
      `/tollgate/webhooks/${webhookId}/deliveries?limit=2&cursor=${first.body.nextCursor}`,
    );
    const third = await call(
      'get',
      `/tollgate/webhooks/${webhookId}/deliveries?limit=2&cursor=${second.body.nextCursor}`,
    );
    expect([...first.body.deliveries, ...second.body.deliveries, ...third.body.deliveries]).toEqual(all);
    expect(third.body.nextCursor).toBeUndefined();
    expect((await call('get', `/tollgate/webhooks/${webhookId}/deliveries?cursor=nonsense`)).body.code).toBe(
      'invalid_cursor',
    );
  });
});
