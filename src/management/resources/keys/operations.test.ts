/**
 * Every status the OpenAPI document lists for each consumer API key operation (keys.ts), and how a
 * caller meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the
 * embedded store, checks each answer against the document, and fails when a documented status or code
 * has no block here.
 */
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  limiterDown,
  succeeds,
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        rate_limit_not_found: (t) => t.send({ body: { name: 'a key', rateLimitId: 'no-such-plan' } }),
        consumer_not_found: (t) => t.send({ body: { name: 'a key', consumerId: UNKNOWN_CONSUMER } }),
      },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  listConsumerApiKeys: {
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

  getConsumerApiKey: {
    valid: async (harness) => ({ params: { consumerApiKeyId: await harness.key() } }),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { key_not_found: all((t) => t.send({ params: UNKNOWN_KEY }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: {
        database_unavailable: whileTheDatabaseIsGone,
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        key_not_found: all((t) => t.send({ params: UNKNOWN_KEY }), withAnUndecodableId),
        consumer_not_found: (t) => t.send({ body: { consumerId: UNKNOWN_CONSUMER } }),
      },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  deleteConsumerApiKey: {
    valid: async (harness) => ({ params: { consumerApiKeyId: await harness.key() } }),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { key_not_found: all((t) => t.send({ params: UNKNOWN_KEY }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { key_not_found: all((t) => t.send({ params: UNKNOWN_KEY }), withAnUndecodableId) },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },
});
