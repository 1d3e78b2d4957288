/**
 * The statuses of each rate limit plan operation (operations.ts) that are its own, and how a caller
 * meets each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares,
 * derived from its definition, runs each block against an app on the embedded store, checks each answer
 * against the document, and fails when a documented status or code has no way to it.
 */
import { describeOperations, succeeds, uniqueId } from '../../../../tests/helpers/operation-test-kit.js';
import { planOperations } from './operations.js';

const UNKNOWN_PLAN = { rateLimitId: 'no-such-plan' };

describeOperations(planOperations, {
  createRateLimitPlan: {
    valid: () => ({ body: { rateLimitId: uniqueId('plan'), limit: 10, period: 'minute' } }),
    statuses: {
      201: succeeds,
      400: {
        validation_failed: (t) =>
          t.send({ body: { rateLimitId: uniqueId('plan'), limit: 0, period: 'minute' } }),
      },
      // Plans are never overwritten.
      409: {
        rate_limit_exists: async (t) =>
          t.send({ body: { rateLimitId: await t.harness.plan(), limit: 1, period: 'day' } }),
      },
    },
  },

  listRateLimitPlans: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
    },
  },

  getRateLimitPlan: {
    valid: async (harness) => ({ params: { rateLimitId: await harness.plan() } }),
    statuses: {
      200: succeeds,
      404: { rate_limit_not_found: (t) => t.send({ params: UNKNOWN_PLAN }) },
    },
  },

  updateRateLimitPlan: {
    valid: async (harness) => ({
      params: { rateLimitId: await harness.plan() },
      body: { description: 'changed' },
    }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { limit: -1 } }),
      },
      404: { rate_limit_not_found: (t) => t.send({ params: UNKNOWN_PLAN }) },
    },
  },

  deleteRateLimitPlan: {
    valid: async (harness) => ({ params: { rateLimitId: await harness.plan() } }),
    statuses: {
      200: succeeds,
      400: { validation_failed: (t) => t.send({ query: { force: 'maybe' } }) },
      404: { rate_limit_not_found: (t) => t.send({ params: UNKNOWN_PLAN }) },
      // A key is bound to the plan and `force` is not `true`: the answer says how many.
      409: {
        rate_limit_in_use: async (t) => {
          const rateLimitId = await t.harness.plan();
          await t.harness.key({ rateLimitId });
          const res = await t.send({ params: { rateLimitId } });
          expect(res.body.keyCount).toBe(1);
          return res;
        },
      },
    },
  },

  applyRateLimitPlan: {
    valid: async (harness) => ({
      body: { consumerApiKeyId: await harness.key(), rateLimitId: await harness.plan() },
    }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { consumerApiKeyId: 'key_abc' } }),
      },
      404: {
        rate_limit_not_found: async (t) =>
          t.send({ body: { consumerApiKeyId: await t.harness.key(), ...UNKNOWN_PLAN } }),
        key_not_found: async (t) =>
          t.send({ body: { consumerApiKeyId: 'key_unknown', rateLimitId: await t.harness.plan() } }),
      },
    },
  },

  removeRateLimitPlan: {
    valid: async (harness) => ({
      body: { consumerApiKeyId: await harness.key({ rateLimitId: await harness.plan() }) },
    }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: {} }),
      },
      404: { key_not_found: (t) => t.send({ body: { consumerApiKeyId: 'key_unknown' } }) },
    },
  },
});
