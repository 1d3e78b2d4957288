/**
 * The statuses of the audit log (operations.ts) that are its own, and how a caller meets each. The kit
 * (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived from its
 * definition, runs each block against an app on the embedded store, checks each answer against the
 * document, and fails when a documented status or code has no way to it.
 */
import { describeOperations, succeeds } from '../../../../tests/helpers/operation-test-kit.js';
import { auditLogOperations } from './operations.js';

describeOperations(auditLogOperations, {
  listAuditLog: {
    // A page holding at least the entry of a key just created, so the document's entry schema is checked.
    valid: async (harness) => {
      await harness.key();
      return { query: { action: 'key.create' } };
    },
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { from: 'yesterday' } }),
      },
    },
  },
});
