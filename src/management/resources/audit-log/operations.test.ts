/**
 * Every status the OpenAPI document lists for the audit log (audit-log.ts), and how a caller meets it.
 * The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the embedded store,
 * checks each answer against the document, and fails when a documented status or code has no block here.
 */
import {
  afterAFailedAttempt,
  describeOperations,
  succeeds,
  whileTheDatabaseIsGone,
  withAnotherMethod,
  withoutTheScope,
  withoutValidToken,
} from '../../../../tests/helpers/operation-test-kit.js';
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
        invalid_cursor: (t) => t.send({ query: { cursor: 'not-issued-here' } }),
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },
});
