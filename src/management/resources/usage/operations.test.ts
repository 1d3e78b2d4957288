/**
 * Every status the OpenAPI document lists for each usage operation (usage.ts), and how a caller meets
 * it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the embedded
 * store, checks each answer against the document, and fails when a documented status or code has no
 * block here.
 */
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  succeeds,
  whileTheDatabaseIsGone,
  withAnotherMethod,
  withAnUndecodableId,
  withoutTheScope,
  withoutValidToken,
} from '../../../../tests/helpers/operation-test-kit.js';
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
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        key_not_found: all(
          (t) => t.send({ params: { consumerApiKeyId: 'key_unknown' } }),
          withAnUndecodableId,
        ),
      },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
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
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        consumer_not_found: all(
          (t) => t.send({ params: { consumerId: 'con_' + 'A'.repeat(22) } }),
          withAnUndecodableId,
        ),
      },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
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
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },
});
