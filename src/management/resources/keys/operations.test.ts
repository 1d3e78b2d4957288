/**
 * The statuses of each consumer API key operation (operations.ts) that are its own, and how a caller
 * meets each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares,
 * derived from its definition, runs each block against an app on the embedded store, checks each answer
 * against the document, and fails when a documented status or code has no way to it.
 */
import { describeOperations, limiterDown, succeeds } from '../../../../tests/helpers/operation-test-kit.js';
import { keyOperations } from './operations.js';

const UNKNOWN_KEY = { consumerApiKeyId: 'key_unknown' };
/** A well-formed consumer id that names no consumer. */
const UNKNOWN_CONSUMER = 'con_' + 'A'.repeat(22);

describeOperations(keyOperations, {
  createConsumerApiKey: {
    valid: () => ({ body: { name: 'a key' } }),
    statuses: {
      201: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { name: '' } }),
      },
      404: {
        rate_limit_not_found: (t) => t.send({ body: { name: 'a key', rateLimitId: 'no-such-plan' } }),
        consumer_not_found: (t) => t.send({ body: { name: 'a key', consumerId: UNKNOWN_CONSUMER } }),
      },
    },
  },

  listConsumerApiKeys: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
    },
  },

  getConsumerApiKey: {
    valid: async (harness) => ({ params: { consumerApiKeyId: await harness.key() } }),
    statuses: {
      200: succeeds,
      404: { key_not_found: (t) => t.send({ params: UNKNOWN_KEY }) },
      503: {
        // The detail peeks at the limits of the key's plan.
        limit_unavailable: async (t) => {
          const consumerApiKeyId = await t.harness.key({ rateLimitId: await t.harness.plan() });
          return t.send({ app: t.harness.appWith({ limiter: limiterDown }), params: { consumerApiKeyId } });
        },
      },
    },
  },

  updateConsumerApiKey: {
    valid: async (harness) => ({
      params: { consumerApiKeyId: await harness.key() },
      body: { name: 'renamed' },
    }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { enabled: 'yes' } }),
      },
      404: {
        key_not_found: (t) => t.send({ params: UNKNOWN_KEY }),
        consumer_not_found: (t) => t.send({ body: { consumerId: UNKNOWN_CONSUMER } }),
      },
    },
  },

  deleteConsumerApiKey: {
    valid: async (harness) => ({ params: { consumerApiKeyId: await harness.key() } }),
    statuses: {
      200: succeeds,
      404: { key_not_found: (t) => t.send({ params: UNKNOWN_KEY }) },
    },
  },

  rollConsumerApiKey: {
    valid: async (harness) => ({
      params: { consumerApiKeyId: await harness.key() },
      body: { gracePeriodSeconds: 60 },
    }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { gracePeriodSeconds: -1 } }),
      },
      404: { key_not_found: (t) => t.send({ params: UNKNOWN_KEY }) },
    },
  },
});
