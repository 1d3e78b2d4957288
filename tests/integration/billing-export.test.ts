/**
 * Billing exports (docs/guides/billing-export.md) through the management API in process, on the embedded SQLite
 * store and a real Postgres, against real HTTP receivers on 127.0.0.1 that take each service's
 * documented format and dedupe as it does (tests/helpers/billing-receivers.ts). Whatever the receiver
 * does (answers 500 for a while, hangs, drops the connection before or after taking an event), it ends
 * holding exactly the usage stored, to the unit; late usage goes as a correction; a credential appears in
 * no answer, run log, audit entry or log line.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { EXPORT_TYPES } from '../../src/billing/billing-export.js';
import { BillingExporter, type BillingExporterOptions } from '../../src/billing/billing-exporter.js';
import { BillingExportRepository } from '../../src/billing/export-repository.js';
import { idempotencyId } from '../../src/billing/idempotency-id.js';
import { LedgerRepository } from '../../src/billing/ledger-repository.js';
import { SUBJECT_USAGE } from '../../src/billing/subject-usage-repository.js';
import { rotateSecrets } from '../../src/keys/rotate-secrets.js';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { migrate } from '../../src/store/migrate.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { emptyBucket, emptyFiledUsage, emptyKeyUsage } from '../../src/usage/usage.js';
import { BillingReceiver, type ReceiverFault, type ReceiverType } from '../helpers/billing-receivers.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, storedText, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const MINUTE = 60_000;
const TYPES: readonly ReceiverType[] = EXPORT_TYPES;
/** The types whose service takes 100 events a request. */
const BATCHED: readonly ReceiverType[] = ['stripe-v2', 'metronome', 'openmeter', 'lago'];
const FAULTS: readonly ReceiverFault[] = ['status-500', 'hang', 'close', 'close-after-taking'];
/** Quick timeouts and backoff: the faults play out in seconds. */
const OPTIONS: BillingExporterOptions = {
  runEveryMs: 3_600_000,
  settleMs: 5_000,
  sendTimeoutMs: 300,
  leaseMs: 2_000,
  backoff: { baseMs: 1_000, maxMs: 4_000 },
};

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('billing exports on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let exporter: BillingExporter;
  let usage: UsageRepository;
  const logLines: string[] = [];
  const encryptionKeys = [randomBytes(32)];
  /**
   * A day ago, on the hour: the buckets are in the past for the receivers (Stripe takes none from the
   * future), and the clock is the test's. An export sends the usage of every key, so each test works in
   * a quarter of an hour of its own, after those of the tests before it (`freshWindow`), and its exports
   * are deleted after it: a scheduled pass runs only the exports of the test that asks for it.
   */
  const base = Math.floor((Date.now() - 24 * 3_600_000) / 3_600_000) * 3_600_000;
  let now = base;
  const clock = () => now;
  let windowStart = base;
  /** Moves the clock to the start of a quarter hour no test used, and returns it. */
  const freshWindow = () => {
    windowStart += 15 * MINUTE;
    now = windowStart;
    return windowStart;
  };
  const receivers: BillingReceiver[] = [];
  /** Every credential handed to Tollgate, to prove none comes back. */
  const credentials: string[] = [];

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });
    exporter = new BillingExporter(storage.handle.db, encryptionKeys, logger, new Metrics(), clock, OPTIONS);
    usage = new UsageRepository(storage.handle.db, clock);
    app = createManagementApp(
      managementDeps(storage.handle.db, {
        rootToken: ROOT_TOKEN,
        logger,
        clock,
        encryptionKeys,
        billing: exporter,
      }),
    );
  }, 60_000);

  afterEach(async () => {
    // Whatever a test stored of an export, its sends and its attempts holds no credential in the clear.
    const rows = [
      await storedText(storage.handle.db, 'billing_exports'),
      await storedText(storage.handle.db, 'billing_export_attempts'),
    ].join('\n');
    for (const credential of credentials) expect(rows).not.toContain(credential);
    const exports = new BillingExportRepository(storage.handle.db);
    for (const id of await exports.ids()) await exports.delete(id);
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  afterAll(async () => {
    await exporter.stop();
    await storage.dispose();
  });

  type Method = 'get' | 'post' | 'patch' | 'delete';
  const call = (method: Method, path: string, body?: unknown) => {
    const req = request(app)[method](path).set('Authorization', `Bearer ${ROOT_TOKEN}`);
    return body === undefined ? req : req.send(body as object);
  };

  /** A receiver of `type` that takes one credential of its own. */
  async function receiver(type: ReceiverType): Promise<BillingReceiver> {
    const credential = `secret-${type}-${randomBytes(12).toString('hex')}`;
    credentials.push(credential);
    const started = await BillingReceiver.start(type, credential);
    receivers.push(started);
    return started;
  }

  async function key(externalId: string | null, metadata?: object): Promise<string> {
    const res = await call('post', '/consumer-api-key/create', {
      name: 'billed',
      externalId,
      ...(metadata && { metadata }),
    });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  /** `requests` of a key's usage (one unit each) in the minute starting `minute`, under `consumerId` if any. */
  function keyUsageOf(minute: number, requests: number, consumerId?: string) {
    const counts = { ...emptyBucket(), requests, successful: requests, cost: requests, status2xx: requests };
    const keyUsage = emptyKeyUsage();
    keyUsage.endpoints.set('/billed', counts);
    keyUsage.minutes.set(minute, counts);
    if (consumerId !== undefined)
      keyUsage.consumers.set(consumerId, {
        ...emptyFiledUsage(),
        endpoints: new Map([['/billed', { ...counts }]]),
        minutes: new Map([[minute, { ...counts }]]),
      });
    return keyUsage;
  }

  /** A key's usage (`keyUsageOf`) stored as the flush stores it, in a batch of its own. */
  async function store(keyId: string, minute: number, requests: number, consumerId?: string): Promise<void> {
    await usage.applyBatch(randomUUID(), new Map([[keyId, keyUsageOf(minute, requests, consumerId)]]));
  }

  /** The units stored for these keys in minute buckets from `fromMs` on, by the customer each is billed to. */
  async function stored(customers: Record<string, string>, fromMs = base): Promise<Record<string, number>> {
    const rows = await storage.handle.db
      .selectFrom('usage_buckets')
      .select(['key_id', 'requests'])
      .where('granularity', '=', 'minute')
      .where('key_id', 'in', Object.keys(customers))
      .where('start', '>=', new Date(fromMs))
      .execute();
    const totals: Record<string, number> = {};
    for (const r of rows)
      totals[customers[r.key_id]!] = (totals[customers[r.key_id]!] ?? 0) + Number(r.requests);
    return totals;
  }

  async function createExport(
    type: ReceiverType,
    target: BillingReceiver,
    extra: object = {},
  ): Promise<string> {
    const res = await call('post', '/tollgate/billing-exports', {
      type,
      url: target.url,
      credential: target.credential,
      eventName: 'api_requests',
      interval: 'minute',
      subject: 'key',
      ...extra,
    });
    expect(res.status).toBe(201);
    expect(checker.problems('post', '/tollgate/billing-exports', res)).toEqual([]);
    return res.body.id;
  }

  async function run(exportId: string) {
    const res = await call('post', `/tollgate/billing-exports/${exportId}/runs`);
    expect(res.status).toBe(201);
    expect(checker.problems('post', '/tollgate/billing-exports/{billingExportId}/runs', res)).toEqual([]);
    return res.body;
  }

  it.each(TYPES)(
    '%s: sends each closed bucket once per key in the documented format, and late usage as a correction',
    async (type) => {
      const start = freshWindow();
      const target = await receiver(type);
      const exportId = await createExport(type, target);
      const a = await key('cus_a');
      const b = await key('cus_b');
      await store(a, start + MINUTE, 3);
      await store(a, start + 2 * MINUTE, 4);
      await store(b, start + MINUTE, 5);
      // Still open: its minute has not ended 5 s ago.
      await store(b, start + 9 * MINUTE, 6);
      now = start + 9 * MINUTE + 30_000;

      const first = await run(exportId);
      expect(first).toMatchObject({
        startedBy: 'manual',
        planned: 3,
        delivered: 3,
        failed: 0,
        skippedSubjects: [],
        error: null,
      });
      expect(first.sends).toHaveLength(3);
      expect(first.sends).toEqual(
        expect.arrayContaining([
          {
            subject: a,
            customer: 'cus_a',
            bucketStart: iso(start + MINUTE),
            revision: 1,
            value: 3,
            idempotencyId: idempotencyId(exportId, a, start + MINUTE, 1),
            status: expect.any(Number),
            delivered: true,
            error: null,
          },
          expect.objectContaining({ subject: b, bucketStart: iso(start + MINUTE), revision: 1, value: 5 }),
          expect.objectContaining({
            subject: a,
            bucketStart: iso(start + 2 * MINUTE),
            revision: 1,
            value: 4,
          }),
        ]),
      );
      expect(target.totals()).toEqual({ cus_a: 7, cus_b: 5 });
      expect(target.events().map((e) => [e.eventName, e.timeMs])).toContainEqual([
        'api_requests',
        start + MINUTE,
      ]);

      // Nothing new: nothing sent.
      expect(await run(exportId)).toMatchObject({ planned: 0, delivered: 0, sends: [] });
      // Usage that reaches the store after its bucket was sent goes as the next revision, the difference only.
      await store(a, start + MINUTE, 2);
      const correction = await run(exportId);
      expect(correction.sends).toEqual([
        expect.objectContaining({
          subject: a,
          bucketStart: iso(start + MINUTE),
          revision: 2,
          value: 2,
          idempotencyId: idempotencyId(exportId, a, start + MINUTE, 2),
          delivered: true,
        }),
      ]);
      // The open minute closes.
      now = start + 10 * MINUTE + 5_000;
      expect((await run(exportId)).sends).toEqual([
        expect.objectContaining({ subject: b, revision: 1, value: 6 }),
      ]);

      expect(target.totals()).toEqual(await stored({ [a]: 'cus_a', [b]: 'cus_b' }));
      expect(target.totals()).toEqual({ cus_a: 9, cus_b: 11 });
      expect(target.formatErrors).toEqual([]);
      const log = await call('get', `/tollgate/billing-exports/${exportId}/runs`);
      expect(checker.problems('get', '/tollgate/billing-exports/{billingExportId}/runs', log)).toEqual([]);
      expect(log.body.runs.map((r: { sends: unknown[] }) => r.sends.length)).toEqual([1, 1, 0, 3]);
    },
  );

  it.each(TYPES.flatMap((type) => FAULTS.map((fault) => [type, fault] as const)))(
    '%s under %s: retried under the same ids until the receiver holds exactly the stored usage',
    async (type, fault) => {
      const start = freshWindow();
      const target = await receiver(type);
      const exportId = await createExport(type, target);
      const keys = { [await key('cus_x')]: 'cus_x', [await key('cus_y')]: 'cus_y' };
      const [x, y] = Object.keys(keys) as [string, string];
      for (let m = 1; m <= 3; m++) {
        await store(x, now + m * MINUTE, m);
        await store(y, now + m * MINUTE, 10 * m);
      }
      now += 5 * MINUTE;
      target.fault = fault;
      const failing = await run(exportId);
      expect(failing).toMatchObject({ planned: 6, delivered: 0 });
      expect(failing.failed).toBeGreaterThan(0);
      expect(failing.sends[0]).toMatchObject({
        delivered: false,
        status: fault === 'status-500' ? 500 : null,
        error: expect.any(String),
      });

      // The schedule goes on while the receiver fails: new usage is planned, nothing is sent twice, and
      // the sends wait out the backoff (1 s after the first failure, 2 s after the second): a pass inside
      // it sends nothing, the pass at its end tries again.
      await store(x, now - 2 * MINUTE, 7);
      for (const triesAgain of [false, true, false]) {
        const requests = target.requests.length;
        now += 500;
        await exporter.runScheduled();
        expect(target.requests.length > requests).toBe(triesAgain);
      }
      const detail = await call('get', `/tollgate/billing-exports/${exportId}`);
      expect(detail.body.deliveryFailures).toBeGreaterThan(0);
      expect(detail.body.deliverAfter).not.toBeNull();

      target.fault = 'none';
      // Until the receiver holds it all and the export knows it works again (a batch may have been
      // taken whole while its answer was lost: its resend is what tells).
      const failures = async () =>
        (await call('get', `/tollgate/billing-exports/${exportId}`)).body.deliveryFailures as number;
      for (let i = 0; i < 10 && (target.total() < 73 || (await failures()) > 0); i++) {
        now += 5_000;
        await exporter.runScheduled();
      }
      expect(target.totals()).toEqual(await stored(keys, start));
      expect(target.totals()).toEqual({ cus_x: 13, cus_y: 60 });
      // Every request carried one of the 7 sends' ids: a retry never made a new one.
      const planned = Object.keys(keys).flatMap((k) =>
        [1, 2, 3].map((m) => idempotencyId(exportId, k, start + m * MINUTE, 1)),
      );
      planned.push(idempotencyId(exportId, x, start + 3 * MINUTE, 2));
      expect(target.ids()).toEqual(new Set(planned));
      expect(target.formatErrors).toEqual([]);
      const after = await call('get', `/tollgate/billing-exports/${exportId}`);
      expect(after.body).toMatchObject({ deliveryFailures: 0, deliverAfter: null });
    },
    30_000,
  );

  it.each(BATCHED)(
    '%s: sends 100 events a request at most, one id per event, and the receiver holds exactly the stored usage',
    async (type) => {
      const start = freshWindow();
      const target = await receiver(type);
      const exportId = await createExport(type, target);
      const names = Array.from({ length: 130 }, (_, i) => `cus_batch_${i}`);
      // Ten at a time, as many as the pool's connections: a create waits 2 s at most for one.
      const ids: string[] = [];
      for (let i = 0; i < names.length; i += 10)
        ids.push(...(await Promise.all(names.slice(i, i + 10).map((name) => key(name)))));
      const customers = Object.fromEntries(ids.map((id, i) => [id, names[i]!]));
      // One flush's batch, as 130 busy keys make.
      await usage.applyBatch(
        randomUUID(),
        new Map(ids.map((id, i) => [id, keyUsageOf(start + MINUTE, 1 + (i % 3))])),
      );
      now = start + 3 * MINUTE;
      const result = await run(exportId);
      expect(result).toMatchObject({ planned: 130, delivered: 130, failed: 0 });
      expect(target.requests.map((r) => r.ids.length).sort((a, b) => b - a)).toEqual([100, 30]);
      expect(target.totals()).toEqual(await stored(customers, start));
      expect(target.formatErrors).toEqual([]);
    },
    60_000,
  );

  it.each(BATCHED)(
    '%s: a receiver that fails every other request ends holding exactly the stored usage per customer and bucket, every retry under the same ids',
    async (type) => {
      const start = freshWindow();
      const target = await receiver(type);
      const exportId = await createExport(type, target);
      const customers: Record<string, string> = {};
      for (let i = 0; i < 3; i++) customers[await key(`cus_half_${i}`)] = `cus_half_${i}`;
      target.fault = 'fail-half';
      // A minute of usage at a time, each closing before the next run: one batch a run. Runs by hand
      // (they run this export alone, whatever earlier tests left; the schedule is the fault matrix's).
      for (let m = 1; m <= 6; m++) {
        for (const [i, k] of Object.keys(customers).entries()) await store(k, start + m * MINUTE, m + i);
        now = start + (m + 1) * MINUTE + 10_000;
        await run(exportId);
      }
      for (let i = 0; i < 10 && target.total() < 81; i++) await run(exportId);
      const byBucket: Record<string, number> = {};
      for (const [k, customer] of Object.entries(customers))
        for (let m = 1; m <= 6; m++)
          byBucket[`${customer} ${new Date(start + m * MINUTE).toISOString()}`] =
            m + Object.keys(customers).indexOf(k);
      expect(target.totalsByBucket()).toEqual(byBucket);
      expect(target.totals()).toEqual(await stored(customers, start));
      // Half the requests failed, and what they carried went again under the same ids.
      expect(target.requests.length).toBeGreaterThanOrEqual(4);
      expect(target.repeats()).toBeGreaterThan(0);
      expect(target.ids()).toEqual(
        new Set(
          Object.keys(customers).flatMap((k) =>
            [1, 2, 3, 4, 5, 6].map((m) => idempotencyId(exportId, k, start + m * MINUTE, 1)),
          ),
        ),
      );
      expect(target.formatErrors).toEqual([]);
    },
    60_000,
  );

  it.each(BATCHED)(
    '%s: a 429 with Retry-After holds back every run, a manual one too, until it has passed',
    async (type) => {
      const start = freshWindow();
      const target = await receiver(type);
      const exportId = await createExport(type, target);
      const k = await key('cus_slow');
      await store(k, start + MINUTE, 4);
      now = start + 3 * MINUTE;
      target.fault = 'status-429';
      target.retryAfterSeconds = 120;
      const refused = await run(exportId);
      expect(refused).toMatchObject({ delivered: 0, failed: 1 });
      expect(refused.sends[0]).toMatchObject({ status: 429, delivered: false });
      target.fault = 'none';
      const asked = target.requests.length;
      // 60 s later: still inside the 120 s asked for, so neither a manual nor a scheduled run sends.
      now += 60_000;
      const early = await run(exportId);
      expect(early).toMatchObject({ delivered: 0, sends: [], error: expect.stringContaining('Retry-After') });
      await exporter.runScheduled();
      expect(target.requests.length).toBe(asked);
      now += 61_000;
      expect(await run(exportId)).toMatchObject({ delivered: 1, error: null });
      expect(target.totals()).toEqual({ cus_slow: 4 });
    },
  );

  it('stripe-v2: a session token that expires mid-run is renewed and the refused batch sent again under the same ids', async () => {
    const start = freshWindow();
    const target = await receiver('stripe-v2');
    const exportId = await createExport('stripe-v2', target, { streamUrl: target.url });
    const customers = { [await key('cus_tok_a')]: 'cus_tok_a', [await key('cus_tok_b')]: 'cus_tok_b' };
    const [a, b] = Object.keys(customers) as [string, string];
    await store(a, start + MINUTE, 2);
    now = start + 3 * MINUTE;
    expect(await run(exportId)).toMatchObject({ delivered: 1 });
    expect(target.sessionsOpened).toBe(1);
    // Stripe's token lapses: the stream refuses it with 401 billing_meter_event_session_expired.
    target.expireSessions();
    await store(b, start + 2 * MINUTE, 5);
    now = start + 4 * MINUTE;
    expect(await run(exportId)).toMatchObject({ delivered: 1, failed: 0 });
    expect(target.sessionsOpened).toBe(2);
    expect(target.repeats()).toBe(1);
    expect(target.totals()).toEqual(await stored(customers, start));
    // The secret key refused: nothing is delivered, the run log says why, and the key is not in it.
    const patched = await call('patch', `/tollgate/billing-exports/${exportId}`, { credential: 'sk_wrong' });
    expect(patched.status).toBe(200);
    await store(a, start + 3 * MINUTE, 1);
    now = start + 5 * MINUTE;
    const refused = await run(exportId);
    expect(refused).toMatchObject({ delivered: 0, failed: 1 });
    expect(refused.sends[0]).toMatchObject({ status: 401, delivered: false });
    expect(JSON.stringify(refused)).not.toContain('sk_wrong');
  });

  it.each(['lago', 'metronome'] as const)(
    '%s: an event the receiver refuses in a batch is not marked delivered; the others of the batch are',
    async (type) => {
      const start = freshWindow();
      const target = await receiver(type);
      const exportId = await createExport(type, target);
      const good = await key('cus_good');
      const bad = await key('cus_unknown');
      const other = await key('cus_other');
      await store(good, start + MINUTE, 3);
      await store(bad, start + MINUTE, 4);
      await store(other, start + MINUTE, 5);
      target.refusedCustomers.add('cus_unknown');
      now = start + 3 * MINUTE;
      const result = await run(exportId);
      expect(result).toMatchObject({ planned: 3, delivered: 2, failed: 1 });
      const bySubject = Object.fromEntries(
        result.sends.map((s: { subject: string; delivered: boolean }) => [s.subject, s.delivered]),
      );
      expect(bySubject).toEqual({ [good]: true, [bad]: false, [other]: true });
      expect(target.totals()).toEqual({ cus_good: 3, cus_other: 5 });
      // Lago names the refused event: the two others go again at once, together. Metronome names none:
      // each event is tried alone.
      expect(target.requests.map((r) => r.ids.length)).toEqual(type === 'lago' ? [3, 2] : [3, 1, 1, 1]);
      // Once the receiver knows the customer, the refused event goes, under its own id, and only it.
      target.refusedCustomers.clear();
      now += 5 * MINUTE;
      expect(await run(exportId)).toMatchObject({ delivered: 1, failed: 0 });
      expect(target.totals()).toEqual({ cus_good: 3, cus_unknown: 4, cus_other: 5 });
      expect(target.formatErrors).toEqual([]);
    },
  );

  it('stream URL: only for stripe-v2, checked like url, answered for stripe-v2 only', async () => {
    const target = await receiver('stripe-v2');
    const bad = await call('post', '/tollgate/billing-exports', {
      type: 'metronome',
      url: target.url,
      streamUrl: target.url,
      credential: 'x',
      eventName: 'e',
      interval: 'minute',
      subject: 'key',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ field: 'streamUrl', message: 'is only for stripe-v2 exports' }]);
    const id = await createExport('stripe-v2', target);
    const detail = await call('get', `/tollgate/billing-exports/${id}`);
    expect(detail.body.streamUrl).toBeNull();
    const query = await call('patch', `/tollgate/billing-exports/${id}`, {
      streamUrl: 'https://x.test/?a=1',
    });
    expect(query.status).toBe(400);
    expect(query.body.details).toEqual([
      { field: 'streamUrl', message: 'must not carry a query string or fragment' },
    ]);
    const ok = await call('patch', `/tollgate/billing-exports/${id}`, {
      streamUrl: 'https://meter-events.test',
    });
    expect(ok.body.streamUrl).toBe('https://meter-events.test');
  });

  it('runs on two replicas at once without sending any bucket twice; a manual run meets another replica’s lease with 409', async () => {
    const start = freshWindow();
    const target = await receiver('openmeter');
    const exportId = await createExport('openmeter', target);
    const other = new BillingExporter(
      storage.handle.db,
      encryptionKeys,
      createLogger('silent'),
      new Metrics(),
      clock,
      OPTIONS,
    );
    const keys: Record<string, string> = {};
    for (let i = 0; i < 5; i++) keys[await key(`cus_${i}`)] = `cus_${i}`;
    for (let round = 0; round < 5; round++) {
      for (const [i, k] of Object.keys(keys).entries())
        await store(k, start + (round % 3) * MINUTE, i + round + 1);
      now += MINUTE;
      await Promise.all([exporter.runScheduled(), other.runScheduled(), exporter.runScheduled()]);
    }
    now += MINUTE;
    await Promise.all([exporter.runScheduled(), other.runScheduled()]);
    expect(target.totals()).toEqual(await stored(keys, start));
    const sends = await storage.handle.db
      .selectFrom('billing_export_sends')
      .select(['subject_id', 'bucket_start', 'revision'])
      .where('export_id', '=', exportId)
      .execute();
    expect(new Set(sends.map((s) => `${s.subject_id} ${s.bucket_start.getTime()} ${s.revision}`)).size).toBe(
      sends.length,
    );

    expect(
      await new BillingExportRepository(storage.handle.db).takeLease(
        exportId,
        'another-replica',
        new Date(now),
        60_000,
      ),
    ).toBe(true);
    const busy = await call('post', `/tollgate/billing-exports/${exportId}/runs`);
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('billing_export_busy');
    expect(busy.headers['retry-after']).toBe('5');
    expect(checker.problems('post', '/tollgate/billing-exports/{billingExportId}/runs', busy)).toEqual([]);
    await new BillingExportRepository(storage.handle.db).releaseLease(exportId, 'another-replica');
    await other.stop();
  });

  it('plans each revision once however many replicas plan the same export at the same moment', async () => {
    const start = freshWindow();
    const target = await receiver('cloudevents');
    const exportId = await createExport('cloudevents', target);
    await store(await key('cus_p'), start + MINUTE, 3);
    now = start + 5 * MINUTE;
    const ledger = new LedgerRepository(storage.handle.db);
    const plans = await Promise.all(
      Array.from({ length: 5 }, () =>
        ledger.plan(exportId, SUBJECT_USAGE.key, { fromMs: start, toMs: start + 4 * MINUTE }, new Date(now)),
      ),
    );
    expect(plans.map((p) => p!.planned).sort()).toEqual([0, 0, 0, 0, 1]);
  });

  it('tells usage.exported once per delivered send, however many replicas record its delivery', async () => {
    const start = freshWindow();
    const target = await receiver('cloudevents');
    const exportId = await createExport('cloudevents', target);
    const k = await key('cus_told');
    await store(k, start + MINUTE, 4);
    now = start + 5 * MINUTE;
    const ledger = new LedgerRepository(storage.handle.db);
    await ledger.plan(
      exportId,
      SUBJECT_USAGE.key,
      { fromMs: start, toMs: start + 4 * MINUTE },
      new Date(now),
    );
    const [send] = await ledger.pending(exportId, new Date(now), true, 10);
    const billingExport = (await new BillingExportRepository(storage.handle.db).get(exportId))!;
    const usage = { ...send!, subject: 'key' as const, bucketEndMs: send!.bucketStartMs + MINUTE };
    // Two replicas that both sent it record its delivery at once (each in a run of its own).
    await Promise.all(
      ['run_a', 'run_b'].map(async (id) => {
        await ledger.startRun({
          id,
          exportId,
          startedBy: 'manual',
          startedAt: new Date(now),
          closedBefore: new Date(now),
        });
        await ledger.recordAttempts(
          id,
          billingExport,
          [{ send: usage, outcome: { kind: 'delivered', status: 202 }, retryAt: new Date(now) }],
          new Date(now),
        );
      }),
    );
    const told = await storage.handle.db
      .selectFrom('outbox_events')
      .select(['type', 'payload'])
      .where('type', '=', 'usage.exported')
      .execute();
    const mine = told
      .map((e) => JSON.parse(e.payload) as { data: { exportId: string } })
      .filter((e) => e.data.exportId === exportId);
    expect(mine).toEqual([
      {
        type: 'usage.exported',
        timestamp: new Date(now).toISOString(),
        data: {
          exportId,
          exportType: 'cloudevents',
          eventName: billingExport.eventName,
          interval: 'minute',
          subject: 'key',
          consumerApiKeyId: k,
          customer: 'cus_told',
          bucket: {
            start: new Date(start + MINUTE).toISOString().slice(0, 19) + 'Z',
            end: new Date(start + 2 * MINUTE).toISOString().slice(0, 19) + 'Z',
          },
          revision: 1,
          value: 4,
          idempotencyId: idempotencyId(exportId, k, start + MINUTE, 1),
        },
      },
    ]);
    expect(told.some((e) => credentials.some((c) => e.payload.includes(c)))).toBe(false);
  });

  it.each(TYPES)(
    '%s: a 409 for an id the receiver already holds is a delivery, told once by usage.exported',
    async (type) => {
      const start = freshWindow();
      const target = await receiver(type);
      target.duplicateStatus = 409;
      const exportId = await createExport(type, target);
      const k = await key('cus_conflict');
      await store(k, start + MINUTE, 6);
      now = start + 3 * MINUTE;
      const id = idempotencyId(exportId, k, start + MINUTE, 1);
      // The receiver takes the event and the connection drops before its answer: tried again.
      target.fault = 'close-after-taking';
      expect(await run(exportId)).toMatchObject({ planned: 1, delivered: 0, failed: 1 });
      target.fault = 'none';
      now += 5_000;
      const retried = await run(exportId);
      expect(retried).toMatchObject({ delivered: 1, failed: 0 });
      expect(retried.sends).toEqual([
        expect.objectContaining({ idempotencyId: id, status: 409, delivered: true, error: null }),
      ]);
      // Delivered: never sent again, the receiver holds it once, and usage.exported tells it once.
      now += 5 * MINUTE;
      expect(await run(exportId)).toMatchObject({ planned: 0, delivered: 0, sends: [] });
      await exporter.runScheduled();
      expect(target.requests.map((r) => r.ids)).toEqual([[id], [id]]);
      expect(target.totals()).toEqual({ cus_conflict: 6 });
      const told = await storage.handle.db
        .selectFrom('outbox_events')
        .select('payload')
        .where('type', '=', 'usage.exported')
        .execute();
      expect(
        told
          .map((e) => (JSON.parse(e.payload) as { data: { exportId: string; value: number } }).data)
          .filter((data) => data.exportId === exportId)
          .map((data) => data.value),
      ).toEqual([6]);
    },
  );

  it('keeps a key without a customer id for later and names it; reads the customer from metadata with customerField', async () => {
    freshWindow();
    const target = await receiver('lago');
    const exportId = await createExport('lago', target);
    const byField = await createExport('lago', target, {
      customerField: 'lagoSubscription',
      eventName: 'by_field',
    });
    const anonymous = await key(null, { lagoSubscription: 'sub_9' });
    await store(anonymous, now + MINUTE, 4);
    now += 3 * MINUTE;
    expect(await run(exportId)).toMatchObject({ planned: 0, skippedSubjects: [anonymous] });
    expect((await run(byField)).sends).toEqual([
      expect.objectContaining({ subject: anonymous, customer: 'sub_9', value: 4, delivered: true }),
    ]);
    expect((await call('patch', `/consumer-api-key/${anonymous}`, { externalId: 'sub_ext' })).status).toBe(
      200,
    );
    expect((await run(exportId)).sends).toEqual([
      expect.objectContaining({ subject: anonymous, customer: 'sub_ext', value: 4 }),
    ]);
    expect(target.totals()).toEqual({ sub_9: 4, sub_ext: 4 });
  });

  it('validates what it stores, keeps type, interval and subject fixed, and answers 404 for an unknown export', async () => {
    const create = (body: object) =>
      call('post', '/tollgate/billing-exports', {
        type: 'openmeter',
        url: 'https://openmeter.example',
        eventName: 'e',
        interval: 'hour',
        subject: 'key',
        ...body,
      });
    const refusals: [object, string][] = [
      [{ type: 'stripe' }, 'credential'],
      [{ type: 'lago' }, 'credential'],
      [{ url: 'ftp://files.example' }, 'url'],
      [{ url: 'https://user:pass@openmeter.example' }, 'url'],
      [{ url: 'https://openmeter.example/?token=1' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ interval: 'week' }, 'interval'],
      [{ subject: 'customer' }, 'subject'],
      [{ eventName: '' }, 'eventName'],
    ];
    for (const [body, field] of refusals) {
      const res = await create(body);
      expect(res.status).toBe(400);
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(checker.problems('post', '/tollgate/billing-exports', res)).toEqual([]);
    }
    const created = await create({});
    expect(created.body).toMatchObject({
      hasCredential: false,
      customerField: null,
      deliveryFailures: 0,
      deliverAfter: null,
    });
    const id = created.body.id;
    for (const body of [{ type: 'stripe' }, { interval: 'day' }, { subject: 'consumer' }, {}]) {
      expect((await call('patch', `/tollgate/billing-exports/${id}`, body)).status).toBe(400);
    }
    const changed = await call('patch', `/tollgate/billing-exports/${id}`, {
      credential: 'om-token',
      eventName: 'renamed',
      customerField: 'account',
    });
    expect(changed.status).toBe(200);
    expect(checker.problems('patch', '/tollgate/billing-exports/{billingExportId}', changed)).toEqual([]);
    expect(changed.body).toMatchObject({
      hasCredential: true,
      eventName: 'renamed',
      customerField: 'account',
      type: 'openmeter',
      interval: 'hour',
    });
    const stripe = await call('post', '/tollgate/billing-exports', {
      type: 'stripe',
      url: 'https://api.stripe.com',
      credential: 'sk_x',
      eventName: 'e',
      interval: 'day',
      subject: 'key',
    });
    const cleared = await call('patch', `/tollgate/billing-exports/${stripe.body.id}`, { credential: null });
    expect(cleared.status).toBe(400);
    expect(cleared.body.details).toEqual([
      { field: 'credential', message: 'is required for stripe exports' },
    ]);

    const unknown = '/tollgate/billing-exports/bex_' + 'A'.repeat(22);
    for (const [method, path] of [
      ['get', unknown],
      ['patch', unknown],
      ['delete', unknown],
      ['get', unknown + '/runs'],
      ['post', unknown + '/runs'],
      ['get', '/tollgate/billing-exports/nope'],
    ] as const) {
      const res = await call(method, path, method === 'patch' ? { eventName: 'x' } : undefined);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('billing_export_not_found');
    }
    expect((await call('delete', `/tollgate/billing-exports/${id}`)).status).toBe(200);
    expect((await call('get', `/tollgate/billing-exports/${id}`)).status).toBe(404);
  });

  it("bills a consumer for what all its keys did while they belonged to it, in cost units, to the consumer's externalId", async () => {
    const start = freshWindow();
    const target = await receiver('cloudevents');
    const exportId = await createExport('cloudevents', target, { subject: 'consumer' });
    const consumer = await call('post', '/tollgate/consumers', { name: 'acme', externalId: 'acct_acme' });
    expect(consumer.status).toBe(201);
    const [a, b, alone] = [await key('cus_a'), await key('cus_b'), await key('cus_alone')];
    await store(a, start + MINUTE, 3, consumer.body.consumerId);
    await store(b, start + MINUTE, 4, consumer.body.consumerId);
    await store(b, start + 2 * MINUTE, 5, consumer.body.consumerId);
    // A key's usage from before it joined (no consumer then), and a key of no consumer: not the consumer's.
    await store(a, start + MINUTE, 10);
    await store(alone, start + MINUTE, 7);
    now = start + 3 * MINUTE + 30_000;
    const first = await run(exportId);
    expect(first).toMatchObject({ planned: 2, delivered: 2, failed: 0, error: null });
    expect(first.sends).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          subject: consumer.body.consumerId,
          customer: 'acct_acme',
          bucketStart: iso(start + MINUTE),
          revision: 1,
          value: 7,
        }),
        expect.objectContaining({
          subject: consumer.body.consumerId,
          bucketStart: iso(start + 2 * MINUTE),
          revision: 1,
          value: 5,
        }),
      ]),
    );
    expect(target.totals()).toEqual({ acct_acme: 12 });
    // Late usage of the consumer: the difference, as the next revision.
    await store(a, start + MINUTE, 2, consumer.body.consumerId);
    expect((await run(exportId)).sends).toEqual([expect.objectContaining({ revision: 2, value: 2 })]);
    expect(target.totals()).toEqual({ acct_acme: 14 });
  });

  it('never shows a credential: not in an answer, the run log, the audit log, a log line or the database', async () => {
    freshWindow();
    const target = await receiver('stripe');
    const exportId = await createExport('stripe', target);
    const k = await key('cus_secretive');
    await store(k, now + MINUTE, 2);
    now += 3 * MINUTE;
    target.fault = 'echo-credential';
    const refused = await run(exportId);
    expect(refused.sends[0]).toMatchObject({
      delivered: false,
      status: 400,
      error: expect.stringContaining('Bearer [credential]'),
    });
    target.fault = 'none';
    now += MINUTE;
    expect((await run(exportId)).delivered).toBe(1);
    const rolled = 'sk_rolled_' + randomBytes(8).toString('hex');
    credentials.push(rolled);
    expect(
      (await call('patch', `/tollgate/billing-exports/${exportId}`, { credential: rolled })).status,
    ).toBe(200);

    const answers = [
      await call('get', '/tollgate/billing-exports'),
      await call('get', `/tollgate/billing-exports/${exportId}`),
      await call('get', `/tollgate/billing-exports/${exportId}/runs`),
      await call('get', '/tollgate/audit-log?limit=1000'),
    ];
    const audit = answers[3]!.body.auditLog.filter(
      (e: { target: { type: string } }) => e.target.type === 'billing_export',
    );
    expect(audit.map((e: { action: string }) => e.action)).toEqual(
      expect.arrayContaining(['billing_export.create', 'billing_export.run', 'billing_export.update']),
    );
    const everything = [
      ...answers.map((a) => JSON.stringify(a.body)),
      ...logLines,
      await storedText(storage.handle.db, 'billing_exports'),
      await storedText(storage.handle.db, 'billing_export_attempts'),
    ].join('\n');
    for (const credential of credentials) expect(everything).not.toContain(credential);
  });

  it('never shows a credential a receiver repeats escaped or encoded, in the run log or a log line', async () => {
    freshWindow();
    // Characters that each form writes its own way.
    const credential = `sk_live/"quoted"\\back+plus space~${randomBytes(6).toString('hex')}`;
    credentials.push(credential);
    const target = await BillingReceiver.start('stripe', credential);
    receivers.push(target);
    const exportId = await createExport('stripe', target);
    const k = await key('cus_escaped');
    await store(k, now + MINUTE, 2);
    now += 3 * MINUTE;
    const unicodeEscaped = (text: string) =>
      [...text].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()).join('');
    const forms: Record<string, (text: string) => string> = {
      'JSON-escaped': (text) => JSON.stringify(text).slice(1, -1),
      '\\/-escaped': (text) => JSON.stringify(text).slice(1, -1).replaceAll('/', '\\/'),
      'URL-encoded': encodeURIComponent,
      'URL-encoded, lower-case hex': (text) =>
        encodeURIComponent(text).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
      'form-encoded': (text) => new URLSearchParams({ t: text }).toString().slice(2),
      'unicode-escaped': unicodeEscaped,
      base64: (text) => Buffer.from(text.replace(/^Bearer /, '')).toString('base64'),
    };
    target.fault = 'echo-credential';
    for (const [name, form] of Object.entries(forms)) {
      target.echo = form;
      const refused = await run(exportId);
      expect({ name, ...refused.sends[0] }).toMatchObject({
        name,
        delivered: false,
        status: 400,
        error: expect.stringContaining('[credential]'),
      });
      expect({ name, error: refused.sends[0].error }).not.toEqual({
        name,
        error: expect.stringContaining(form(credential)),
      });
    }
    const everything = [
      JSON.stringify((await call('get', `/tollgate/billing-exports/${exportId}/runs`)).body),
      ...logLines,
      await storedText(storage.handle.db, 'billing_export_attempts'),
    ].join('\n');
    for (const form of [(text: string) => text, ...Object.values(forms)])
      expect(everything).not.toContain(form(credential));
  });

  it('rotate-secrets re-seals credentials: an export still sends with only the new key', async () => {
    freshWindow();
    const target = await receiver('lago');
    const exportId = await createExport('lago', target);
    const k = await key('sub_rotated');
    await store(k, now + MINUTE, 5);
    now += 3 * MINUTE;
    const newKey = randomBytes(32);
    expect(
      await rotateSecrets(new BillingExportRepository(storage.handle.db), newKey, [
        newKey,
        ...encryptionKeys,
      ]),
    ).toBeGreaterThan(0);
    const rotated = new BillingExporter(
      storage.handle.db,
      [newKey],
      createLogger('silent'),
      new Metrics(),
      clock,
      OPTIONS,
    );
    expect(await rotated.runNow(exportId)).toMatchObject({ run: { delivered: 1 } });
    expect(target.totals()).toEqual({ sub_rotated: 5 });
    await rotated.stop();
  });
});

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z';
