/**
 * The statuses of each usage operation (operations.ts) that are its own, and how a caller meets each.
 * The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived from
 * its definition, runs each block against an app on the embedded store, checks each answer against the
 * document, and fails when a documented status or code has no way to it.
 */
import { describeOperations, succeeds } from '../../../../tests/helpers/operation-test-kit.js';
import { usageOperations } from './operations.js';

const DAY_MS = 86_400_000;
/** An instant `days` ago, as the API writes it. */
const daysAgo = (days: number) =>
  new Date(Date.now() - days * DAY_MS).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Days are kept 400 days (the default USAGE_RETENTION_DAY_DAYS). */
const BEYOND_RETENTION = { granularity: 'day', from: daysAgo(500) };
/** Two days of minutes: 2,880 buckets, more than 1,500. */
const TOO_MANY_BUCKETS = { granularity: 'minute', from: daysAgo(2) };

describeOperations(usageOperations, {
  getConsumerApiKeyUsage: {
    valid: async (harness) => ({ params: { consumerApiKeyId: await harness.key() } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { granularity: 'fortnight' } }),
        range_beyond_retention: (t) => t.send({ query: BEYOND_RETENTION }),
        range_too_large: (t) => t.send({ query: TOO_MANY_BUCKETS }),
      },
      404: {
        key_not_found: (t) => t.send({ params: { consumerApiKeyId: 'key_unknown' } }),
      },
    },
  },

  getConsumerUsage: {
    valid: async (harness) => ({ params: { consumerId: await harness.consumer() } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { groupBy: 'customer', granularity: 'hour' } }),
        range_beyond_retention: (t) => t.send({ query: BEYOND_RETENTION }),
        range_too_large: (t) => t.send({ query: TOO_MANY_BUCKETS }),
      },
      404: {
        consumer_not_found: (t) => t.send({ params: { consumerId: 'con_' + 'A'.repeat(22) } }),
      },
    },
  },

  getFleetUsage: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { from: daysAgo(1), to: daysAgo(2) } }),
        range_beyond_retention: (t) => t.send({ query: BEYOND_RETENTION }),
        range_too_large: (t) => t.send({ query: TOO_MANY_BUCKETS }),
      },
    },
  },
});
