/**
 * Usage is billing data: deleting a key removes the key, never the usage already counted. Through the
 * proxy and the management API, in both modes (embedded SQLite, Redis + Postgres): a consumer with two
 * keys, traffic on both, one key deleted; the consumer's usage, the fleet's and two billing exports (by
 * consumer, and by key) still count every request the deleted key made.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BillingReceiver } from '../helpers/billing-receivers.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

const MINUTE = 60_000;

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  const receivers: BillingReceiver[] = [];

  beforeAll(async () => {
    stop = await mode.start(h);
  }, 60_000);

  afterAll(async () => {
    await stop?.();
    await Promise.all(receivers.map((r) => r.close()));
  });

  /** A management call with the root token, its answer checked against the OpenAPI document. */
  async function call(method: 'get' | 'post' | 'delete', path: string, template: string, body?: unknown) {
    const res = await fetch(h.base + path, {
      method: method.toUpperCase(),
      headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    const reply = {
      status: res.status,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
      body: JSON.parse(text) as any,
      headers: Object.fromEntries(res.headers),
    };
    expect(checker.problems(method, template, reply)).toEqual([]);
    return reply;
  }

  async function billingExport(
    subject: 'consumer' | 'key',
  ): Promise<{ id: string; receiver: BillingReceiver }> {
    const receiver = await BillingReceiver.start('cloudevents');
    receivers.push(receiver);
    const res = await call('post', '/tollgate/billing-exports', '/tollgate/billing-exports', {
      type: 'cloudevents',
      url: receiver.url,
      eventName: 'api_requests',
      interval: 'minute',
      subject,
    });
    expect(res.status).toBe(201);
    return { id: res.body.id, receiver };
  }

  const proxied = async (secret: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await fetch(h.base + '/v1/items', { headers: { authorization: `Bearer ${secret}` } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
  };

  it("keeps a deleted key's usage in its consumer's totals, the fleet's and every billing export", async () => {
    const start = h.now - (h.now % MINUTE);
    const byConsumer = await billingExport('consumer');
    const byKey = await billingExport('key');
    const consumer = await call('post', '/tollgate/consumers', '/tollgate/consumers', {
      name: 'acme',
      externalId: 'acct_acme',
    });
    const consumerId: string = consumer.body.consumerId;
    const newKey = async (externalId: string) =>
      (
        await call('post', '/consumer-api-key/create', '/consumer-api-key/create', {
          name: externalId,
          externalId,
          consumerId,
        })
      ).body as { id: string; secret: string };
    const kept = await newKey('cus_kept');
    const deleted = await newKey('cus_deleted');
    await proxied(kept.secret, 5);
    await proxied(deleted.secret, 7);

    const consumerTotal = async () =>
      (await call('get', `/tollgate/consumers/${consumerId}`, '/tollgate/consumers/{consumerId}')).body.usage
        .totalRequests as number;
    const minuteRange = `granularity=minute&from=${iso(start)}&to=${iso(start + MINUTE)}`;
    const fleetRequests = async () =>
      (await call('get', `/tollgate/usage?${minuteRange}`, '/tollgate/usage')).body.buckets[0]
        .requests as number;
    // Stored, not only pending: what the deletion would have taken with it.
    expect((await waitFor(fleetRequests, (n) => n === 12)).value).toBe(12);
    expect(await consumerTotal()).toBe(12);

    const gone = await call(
      'delete',
      `/consumer-api-key/${deleted.id}`,
      '/consumer-api-key/{consumerApiKeyId}',
    );
    expect(gone.status).toBe(200);
    expect(
      (await call('get', `/consumer-api-key/${deleted.id}`, '/consumer-api-key/{consumerApiKeyId}')).status,
    ).toBe(404);

    expect(await consumerTotal()).toBe(12);
    const detail = await call('get', `/tollgate/consumers/${consumerId}`, '/tollgate/consumers/{consumerId}');
    expect(detail.body).toMatchObject({
      keyCount: 1,
      usage: { totalRequests: 12, successfulRequests: 12, failedRequests: 0, cost: 12 },
    });
    const overTime = await call(
      'get',
      `/tollgate/consumers/${consumerId}/usage?${minuteRange}`,
      '/tollgate/consumers/{consumerId}/usage',
    );
    expect(overTime.body.buckets.map((b: { requests: number }) => b.requests)).toEqual([12]);
    expect(await fleetRequests()).toBe(12);

    // Once the minute has closed, each export bills all of it: the consumer, and each key as its customer.
    h.now = start + 3 * MINUTE;
    for (const { id } of [byConsumer, byKey]) {
      const run = await call(
        'post',
        `/tollgate/billing-exports/${id}/runs`,
        '/tollgate/billing-exports/{billingExportId}/runs',
      );
      expect(run.body).toMatchObject({ failed: 0, skippedSubjects: [], error: null });
    }
    expect(byConsumer.receiver.totals()).toEqual({ acct_acme: 12 });
    expect(byKey.receiver.totals()).toEqual({ cus_kept: 5, cus_deleted: 7 });
    expect([...byConsumer.receiver.formatErrors, ...byKey.receiver.formatErrors]).toEqual([]);
  });
});

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z';
