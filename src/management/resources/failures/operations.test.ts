/**
 * The statuses of each failure log operation (operations.ts) that are its own, and how a caller meets
 * each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares,
 * derived from its definition, checks each answer against the document, and fails when a documented
 * status or code has no way to it. What the log holds is tested through the proxy
 * (tests/integration/failure-log.test.ts).
 */
import { describeOperations, succeeds } from '../../../../tests/helpers/operation-test-kit.js';
import { failureOperations } from './operations.js';

const NO_DATE = { from: 'yesterday' };

describeOperations(failureOperations, {
  listConsumerApiKeyFailures: {
    valid: async (harness) => ({ params: { consumerApiKeyId: await harness.key() } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: NO_DATE }),
      },
      404: {
        key_not_found: (t) => t.send({ params: { consumerApiKeyId: 'key_unknown' } }),
      },
    },
  },

  listConsumerFailures: {
    valid: async (harness) => ({ params: { consumerId: await harness.consumer() } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { code: 'Not A Code' } }),
      },
      404: {
        consumer_not_found: (t) => t.send({ params: { consumerId: 'con_' + 'A'.repeat(22) } }),
      },
    },
  },

  listFleetFailures: {
    valid: () => ({ query: { requestId: 'req-1' } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { to: 'tomorrow' } }),
      },
    },
  },
});
