/**
 * Every status the OpenAPI document lists for each rate limit plan operation (plans.ts), and how a
 * caller meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the
 * embedded store, checks each answer against the document, and fails when a documented status or code
 * has no block here.
 */
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  succeeds,
  uniqueId,
  whileTheDatabaseIsGone,
  whileWritesAreRefused,
  withA65KiBBody,
  withAnotherMethod,
  withAnUndecodableId,
  withATextBody,
  withMalformedJson,
  withoutTheScope,
  withoutValidToken,
} from '../../../../tests/helpers/operation-test-kit.js';
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      // Plans are never overwritten.
      409: {
        rate_limit_exists: async (t) =>
          t.send({ body: { rateLimitId: await t.harness.plan(), limit: 1, period: 'day' } }),
      },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  listRateLimitPlans: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { limit: '0' } }),
        invalid_cursor: (t) => t.send({ query: { cursor: 'not-issued-here' } }),
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },

  getRateLimitPlan: {
    valid: async (harness) => ({ params: { rateLimitId: await harness.plan() } }),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { rate_limit_not_found: all((t) => t.send({ params: UNKNOWN_PLAN }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { rate_limit_not_found: all((t) => t.send({ params: UNKNOWN_PLAN }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  deleteRateLimitPlan: {
    valid: async (harness) => ({ params: { rateLimitId: await harness.plan() } }),
    statuses: {
      200: succeeds,
      400: { validation_failed: (t) => t.send({ query: { force: 'maybe' } }) },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { rate_limit_not_found: all((t) => t.send({ params: UNKNOWN_PLAN }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
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
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        rate_limit_not_found: async (t) =>
          t.send({ body: { consumerApiKeyId: await t.harness.key(), ...UNKNOWN_PLAN } }),
        key_not_found: async (t) =>
          t.send({ body: { consumerApiKeyId: 'key_unknown', rateLimitId: await t.harness.plan() } }),
      },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { key_not_found: (t) => t.send({ body: { consumerApiKeyId: 'key_unknown' } }) },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },
});
