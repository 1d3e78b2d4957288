/**
 * The statuses of each admin token operation (operations.ts) that are its own, and how a caller meets
 * each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived
 * from its definition, runs each block against an app on the embedded store, checks each answer against
 * the document, and fails when a documented status or code has no way to it.
 */
import { describeOperations, succeeds } from '../../../../tests/helpers/operation-test-kit.js';
import { adminTokenOperations } from './operations.js';

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

describeOperations(adminTokenOperations, {
  createAdminToken: {
    // A token of tokens:write alone may grant it.
    valid: () => ({ body: { name: 'ci', scopes: ['tokens:write'] } }),
    statuses: {
      201: succeeds,
      400: {
        validation_failed: (t) =>
          t.send({ body: { name: 'ci', scopes: ['keys:read'], expiresAt: '2020-01-01T00:00:00Z' } }),
      },
      403: {
        // A token that has tokens:write but would grant a scope it lacks.
        insufficient_scope: async (t) =>
          t.send({
            token: (await t.harness.token(['tokens:write'])).secret,
            body: { name: 'ci', scopes: ['keys:read'] },
          }),
        // A token that expires may create only tokens that expire no later: this one never would.
        token_outlives_caller: async (t) =>
          t.send({ token: (await t.harness.token(['tokens:write', 'keys:read'], inAnHour())).secret }),
      },
    },
  },

  listAdminTokens: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
    },
  },

  deleteAdminToken: {
    // A token of tokens:write alone may delete it: it holds every scope the target has.
    valid: async (harness) => ({ params: { tokenId: (await harness.token(['tokens:write'])).id } }),
    statuses: {
      200: succeeds,
      403: {
        // A token that has tokens:write but not every scope of the token it deletes.
        insufficient_scope: async (t) =>
          t.send({
            params: { tokenId: (await t.harness.token(['keys:read'])).id },
            token: (await t.harness.token(['tokens:write'])).secret,
          }),
      },
      404: {
        admin_token_not_found: (t) => t.send({ params: { tokenId: 'tok_' + 'A'.repeat(22) } }),
      },
    },
  },
});
