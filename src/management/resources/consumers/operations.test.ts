/**
 * Every status the OpenAPI document lists for each consumer operation (consumers.ts), and how a caller
 * meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the
 * embedded store, checks each answer against the document, and fails when a documented status or code
 * has no block here.
 */
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  limiterDown,
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
  type Attempt,
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { rate_limit_not_found: (t) => t.send({ body: { name: 'Acme', rateLimitId: UNKNOWN_PLAN } }) },
      405: { method_not_allowed: withAnotherMethod },
      409: { consumer_exists: (t) => externalIdTaken(t, (externalId) => ({ name: 'second', externalId })) },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  listConsumers: {
    valid: () => ({ query: { namePrefix: 'a ' } }),
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

  getConsumer: {
    valid: async (harness) => ({ params: { consumerId: await harness.consumer() } }),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { consumer_not_found: all((t) => t.send({ params: UNKNOWN_CONSUMER }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: {
        database_unavailable: whileTheDatabaseIsGone,
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        consumer_not_found: all((t) => t.send({ params: UNKNOWN_CONSUMER }), withAnUndecodableId),
        rate_limit_not_found: (t) => t.send({ body: { rateLimitId: UNKNOWN_PLAN } }),
      },
      405: { method_not_allowed: withAnotherMethod },
      409: { consumer_exists: (t) => externalIdTaken(t, (externalId) => ({ externalId })) },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  deleteConsumer: {
    valid: async (harness) => ({ params: { consumerId: await harness.consumer() } }),
    statuses: {
      200: succeeds,
      400: { validation_failed: (t) => t.send({ query: { force: 'maybe' } }) },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { consumer_not_found: all((t) => t.send({ params: UNKNOWN_CONSUMER }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
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
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },
});
