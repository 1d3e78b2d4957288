/**
 * The pure rules of billing exports: when a bucket is closed, the idempotency id of a send, how a
 * receiver's answer is read, the backoff, and that an error text never carries the credential.
 */
import type { BillingExport } from '../../src/billing/billing-export.js';
import { backoffMs, closedRange, LATE_USAGE_WINDOW_MS } from '../../src/billing/export-run.js';
import { lagoFormat } from '../../src/billing/formats/lago.js';
import { stripeFormat } from '../../src/billing/formats/stripe.js';
import { idempotencyId } from '../../src/billing/idempotency-id.js';
import { outcomeOf, redacted } from '../../src/billing/send-outcome.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const T = Date.UTC(2026, 10, 22, 9, 0, 0);

const exportOf = (interval: BillingExport['interval'], createdAt = T - 3 * 86_400_000): BillingExport => ({
  id: 'bex_x',
  type: 'stripe',
  url: 'https://api.stripe.com',
  streamUrl: null,
  credentialCiphertext: null,
  eventName: 'e',
  interval,
  subject: 'key',
  customerField: null,
  createdAt: new Date(createdAt),
  lastUpdated: new Date(createdAt),
  deliverAfter: null,
  deliveryFailures: 0,
  retryAfter: null,
});

describe('closedRange', () => {
  it('closes a bucket only once its end is past by the settle time', () => {
    // 09:00:59 with 60 s to settle: 08:59 ended 59 s ago, not yet closed; 08:58 is.
    expect(closedRange(exportOf('minute'), T + 59_000, 60_000).toMs).toBe(T - MINUTE);
    expect(closedRange(exportOf('minute'), T + 60_000, 60_000).toMs).toBe(T);
    expect(closedRange(exportOf('hour'), T + 60_000, 60_000).toMs).toBe(T);
    expect(closedRange(exportOf('hour'), T + 59_999, 60_000).toMs).toBe(T - HOUR);
    expect(closedRange(exportOf('day'), T, 0).toMs).toBe(Date.UTC(2026, 10, 22));
  });

  it('reads from the bucket the export was created in, within the window of late usage', () => {
    expect(closedRange(exportOf('hour', T - 30 * MINUTE), T + 2 * HOUR, 0).fromMs).toBe(T - HOUR);
    expect(closedRange(exportOf('hour'), T, 0).fromMs).toBe(T - LATE_USAGE_WINDOW_MS);
  });
});

describe('idempotencyId', () => {
  it('is the same for the same send, a UUID within Stripe’s 100 characters, and differs with each part', () => {
    const id = idempotencyId('bex_1', 'key_1', T, 1);
    expect(idempotencyId('bex_1', 'key_1', T, 1)).toBe(id);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const others = [
      idempotencyId('bex_2', 'key_1', T, 1),
      idempotencyId('bex_1', 'key_2', T, 1),
      idempotencyId('bex_1', 'key_1', T + MINUTE, 1),
      idempotencyId('bex_1', 'key_1', T, 2),
    ];
    expect(new Set([id, ...others]).size).toBe(5);
  });
});

describe('a receiver’s answer', () => {
  it.each([
    [200, 'delivered'],
    [204, 'delivered'],
    [400, 'refused'],
    [401, 'refused'],
    [404, 'refused'],
    // A conflict with the one id a send carries: the receiver holds it.
    [409, 'delivered'],
    [408, 'unreachable'],
    [425, 'unreachable'],
    [429, 'unreachable'],
    [500, 'unreachable'],
    [503, 'unreachable'],
  ])('%i is %s', (status, kind) => {
    expect(outcomeOf(status, '', false).kind).toBe(kind);
  });

  it('reads Lago’s 422 of a batch by index: held, refused, or not taken because of another', () => {
    const answer = JSON.stringify({
      status: 422,
      error: 'Unprocessable Entity',
      code: 'validation_errors',
      error_details: {
        '0': { transaction_id: ['value_already_exist'] },
        '2': { external_subscription_id: ['subscription_not_found'] },
      },
    });
    expect(lagoFormat.verdicts!(422, answer, 3)).toEqual([
      { kind: 'held' },
      { kind: 'untaken' },
      { kind: 'refused', error: 'HTTP 422: {"external_subscription_id":["subscription_not_found"]}' },
    ]);
    // Details that name no event of the batch, or another status: the batch is judged as a whole.
    expect(
      lagoFormat.verdicts!(422, JSON.stringify({ error_details: { code: ['value_is_mandatory'] } }), 3),
    ).toBeUndefined();
    expect(lagoFormat.verdicts!(400, answer, 3)).toBeUndefined();
  });
});

it('cuts the credential out of an error text, wherever it is, and shortens it', () => {
  expect(redacted('Invalid key sk_live_abc; again sk_live_abc', 'sk_live_abc')).toBe(
    'Invalid key [credential]; again [credential]',
  );
  expect(redacted('x'.repeat(1000), undefined)).toHaveLength(301);
});

it('cuts the credential out in any mix of escapes, and the start of one at the end of a cut answer', () => {
  const credential = 'sk/"a\\b c';
  expect(redacted('{"e": "sk\\/\\"a\\\\b c"} sk%2F%22a%5cb+c c2svImFcYiBj', credential)).toBe(
    '{"e": "[credential]"} [credential] [credential]',
  );
  expect(redacted('key \\u0073\\U006B/"a\\b%20c.', credential)).toBe('key \\u0073\\U006B/"a\\b%20c.');
  expect(redacted('key \\u0073\\u006B/"a\\b%20c.', credential)).toBe('key [credential].');
  // An answer read only so far ends in the credential's first characters: that end is dropped.
  const start = 'x'.repeat(200) + ' sk/"a';
  expect(redacted(start, credential, true)).toBe('x'.repeat(start.length - 6 * credential.length) + '…');
  expect(redacted(start, credential, false)).toBe(start);
});

it('doubles the backoff from its base up to its cap', () => {
  const backoff = { baseMs: 10_000, maxMs: 60_000 };
  expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, backoff))).toEqual([10_000, 20_000, 40_000, 60_000, 60_000]);
});

it('writes Stripe’s meter event form with the same id as identifier and Idempotency-Key', () => {
  const request = stripeFormat.request(
    {
      exportId: 'bex_1',
      type: 'stripe',
      url: 'https://api.stripe.com/',
      streamUrl: 'https://api.stripe.com/',
      eventName: 'api_requests',
      credential: 'sk_test_1',
    },
    [
      {
        idempotencyId: 'id-1',
        subject: 'key',
        subjectId: 'key_1',
        customer: 'cus_1',
        bucketStartMs: T,
        bucketEndMs: T + MINUTE,
        revision: 1,
        units: 42,
      },
    ],
  );
  expect(request.url).toBe('https://api.stripe.com/v1/billing/meter_events');
  expect(request.headers).toEqual({
    'content-type': 'application/x-www-form-urlencoded',
    'idempotency-key': 'id-1',
    authorization: 'Bearer sk_test_1',
  });
  expect(Object.fromEntries(new URLSearchParams(request.body))).toEqual({
    event_name: 'api_requests',
    'payload[stripe_customer_id]': 'cus_1',
    'payload[value]': '42',
    identifier: 'id-1',
    timestamp: String(T / 1000),
  });
});
