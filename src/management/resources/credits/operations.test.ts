/**
 * The statuses of a top-up or set of a balance (operations.ts) that are its own, and how a caller meets
 * each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived
 * from its definition, runs each block against an app on the embedded store, checks each answer against
 * the document, and fails when a documented status or code has no way to it. What the balances hold
 * after is in tests/integration/management-credits.test.ts.
 */
import { all, describeOperations, succeeds } from '../../../../tests/helpers/operation-test-kit.js';
import { creditOperations } from './operations.js';

describeOperations(creditOperations, {
  changeCredits: {
    valid: async (harness) => ({ body: { consumerApiKeyId: await harness.key(), add: 10 } }),
    statuses: {
      200: all(succeeds, async (t) => t.send({ body: { consumerId: await t.harness.consumer(), set: 5 } })),
      400: {
        validation_failed: all(
          (t) => t.send({ body: { consumerApiKeyId: 'key_x', add: 0 } }),
          (t) => t.send({ body: { consumerApiKeyId: 'key_x', consumerId: 'con_' + 'A'.repeat(22), add: 1 } }),
        ),
      },
      404: {
        key_not_found: (t) => t.send({ body: { consumerApiKeyId: 'key_unknown', add: 1 } }),
        consumer_not_found: (t) => t.send({ body: { consumerId: 'con_' + 'A'.repeat(22), add: 1 } }),
      },
    },
  },
});
