/**
 * The statuses of each consumer operation (operations.ts) that are its own, and how a caller meets
 * each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived
 * from its definition, runs each block against an app on the embedded store, checks each answer against
 * the document, and fails when a documented status or code has no way to it.
 */
import {
  type Attempt,
  describeOperations,
  limiterDown,
  succeeds,
  uniqueId,
} from '../../../../tests/helpers/operation-test-kit.js';
import { consumerOperations } from './operations.js';

/** A well-formed consumer id that names no consumer. */
const UNKNOWN_CONSUMER = { consumerId: 'con_' + 'A'.repeat(22) };
const UNKNOWN_PLAN = 'no-such-plan';

/** Another consumer owns an `externalId`, which the call then asks for. */
async function externalIdTaken(t: Attempt, body: (externalId: string) => object) {
  const externalId = uniqueId('acct');
  await t.harness.consumer({ externalId });
  return t.send({ body: body(externalId) });
}

describeOperations(consumerOperations, {
  createConsumer: {
    valid: () => ({ body: { name: 'Acme', externalId: uniqueId('acct'), metadata: { tier: 'pro' } } }),
    statuses: {
      201: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { name: '' } }),
      },
      404: { rate_limit_not_found: (t) => t.send({ body: { name: 'Acme', rateLimitId: UNKNOWN_PLAN } }) },
      409: { consumer_exists: (t) => externalIdTaken(t, (externalId) => ({ name: 'second', externalId })) },
    },
  },

  listConsumers: {
    valid: () => ({ query: { namePrefix: 'a ' } }),
    statuses: {
      200: succeeds,
    },
  },

  getConsumer: {
    valid: async (harness) => ({ params: { consumerId: await harness.consumer() } }),
    statuses: {
      200: succeeds,
      404: { consumer_not_found: (t) => t.send({ params: UNKNOWN_CONSUMER }) },
      503: {
        // The detail peeks at the limits of the consumer's plan.
        limit_unavailable: async (t) => {
          const consumerId = await t.harness.consumer({ rateLimitId: await t.harness.plan() });
          return t.send({ app: t.harness.appWith({ limiter: limiterDown }), params: { consumerId } });
        },
      },
    },
  },

  updateConsumer: {
    valid: async (harness) => ({
      params: { consumerId: await harness.consumer() },
      body: { name: 'renamed' },
    }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { metadata: [1, 2] } }),
      },
      404: {
        consumer_not_found: (t) => t.send({ params: UNKNOWN_CONSUMER }),
        rate_limit_not_found: (t) => t.send({ body: { rateLimitId: UNKNOWN_PLAN } }),
      },
      409: { consumer_exists: (t) => externalIdTaken(t, (externalId) => ({ externalId })) },
    },
  },

  deleteConsumer: {
    valid: async (harness) => ({ params: { consumerId: await harness.consumer() } }),
    statuses: {
      200: succeeds,
      400: { validation_failed: (t) => t.send({ query: { force: 'maybe' } }) },
      404: { consumer_not_found: (t) => t.send({ params: UNKNOWN_CONSUMER }) },
      // The consumer holds a key and `force` is not `true`: the answer says how many.
      409: {
        consumer_has_keys: async (t) => {
          const consumerId = await t.harness.consumer();
          await t.harness.key({ consumerId });
          const res = await t.send({ params: { consumerId } });
          expect(res.body.keyCount).toBe(1);
          return res;
        },
      },
    },
  },
});
