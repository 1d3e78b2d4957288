/**
 * Every status the OpenAPI document lists for each admin token operation (admin-tokens.ts), and how a
 * caller meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the
 * embedded store, checks each answer against the document, and fails when a documented status or code
 * has no block here.
 */
import {
  afterAFailedAttempt,
  all,
  describeOperations,
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
import { adminTokenOperations } from './operations.js';

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

describeOperations(adminTokenOperations, {
  createAdminToken: {
    valid: () => ({ body: { name: 'ci', scopes: ['keys:read'] } }),
    statuses: {
      201: succeeds,
      400: {
        validation_failed: (t) =>
          t.send({ body: { name: 'ci', scopes: ['keys:read'], expiresAt: '2020-01-01T00:00:00Z' } }),
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: {
        // A token without tokens:write, and one that has it but would grant a scope it lacks.
        insufficient_scope: all(withoutTheScope, async (t) =>
          t.send({ token: (await t.harness.token(['tokens:write'])).secret }),
        ),
        // A token that expires may create only tokens that expire no later: this one never would.
        token_outlives_caller: async (t) =>
          t.send({ token: (await t.harness.token(['tokens:write', 'keys:read'], inAnHour())).secret }),
      },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  listAdminTokens: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },

  deleteAdminToken: {
    valid: async (harness) => ({ params: { tokenId: (await harness.token(['keys:read'])).id } }),
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: {
        // A token without tokens:write, and one that has it but not every scope of the token it deletes.
        insufficient_scope: all(withoutTheScope, async (t) =>
          t.send({ token: (await t.harness.token(['tokens:write'])).secret }),
        ),
      },
      404: {
        admin_token_not_found: all(
          (t) => t.send({ params: { tokenId: 'tok_' + 'A'.repeat(22) } }),
          withAnUndecodableId,
        ),
      },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },
});
