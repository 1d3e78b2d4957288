/**
 * The statuses of the caller's own scopes (operations.ts) that are its own, and how a caller meets
 * each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived
 * from its definition, runs each block against an app on the embedded store, checks each answer against
 * the document, and fails when a documented status or code has no way to it. What the answers say is in
 * tests/integration/management-key-search.test.ts.
 */
import {
  all,
  anAdminTokenWhileTheDatabaseIsGone,
  describeOperations,
  instead,
  type Provoke,
  succeeds,
} from '../../../../tests/helpers/operation-test-kit.js';
import { whoamiOperations } from './operations.js';

/** An admin token of the narrowest kind: one scope is enough to read itself. */
const withOneScope: Provoke = async (t) => t.send({ token: (await t.harness.token(['usage:read'])).secret });

describeOperations(whoamiOperations, {
  whoami: {
    valid: () => ({}),
    statuses: {
      200: all(succeeds, withOneScope),
      503: { database_unavailable: instead(anAdminTokenWhileTheDatabaseIsGone) },
    },
  },
});
