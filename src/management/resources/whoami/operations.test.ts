/**
 * Every status the OpenAPI document lists for the caller's own scopes (whoami.ts), and how a caller
 * meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the
 * embedded store, checks each answer against the document, and fails when a documented status or code
 * has no block here. What the answers say is in tests/integration/management-key-search.test.ts.
 */
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  succeeds,
  withAnotherMethod,
  withoutValidToken,
  type Provoke,
} from '../../../../tests/helpers/operation-test-kit.js';
import { STORAGES } from '../../../../tests/helpers/management-storage.js';
import { whoamiOperations } from './operations.js';

/** An admin token of the narrowest kind: one scope is enough to read itself. */
const withOneScope: Provoke = async (t) => t.send({ token: (await t.harness.token(['usage:read'])).secret });

/** An admin token is checked against the database: with the database gone it cannot be. */
const whileTheDatabaseIsGone: Provoke = async (t) => {
  const answers = [];
  for (const kind of Object.keys(STORAGES) as (keyof typeof STORAGES)[]) {
    const harness = await t.harnessOf(kind);
    const { secret } = await harness.token(['keys:read']);
    const call = await t.prepare(harness);
    answers.push(await harness.whileDatabaseGone((app) => call.send({ app, token: secret })));
  }
  return answers;
};

describeOperations(whoamiOperations, {
  whoami: {
    valid: () => ({}),
    statuses: {
      200: all(succeeds, withOneScope),
      401: { unauthorized: withoutValidToken },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },
});
