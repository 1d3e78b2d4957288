/**
 * The statuses of a verify call (operations.ts) that are its own, and how a caller meets each, through
 * the management app (the public server answers the same call on its own path: route.ts). The kit
 * (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived from its
 * definition, runs each block against an app on the embedded store, checks each answer against the
 * document, and fails when a documented status or code has no way to it. What the decisions say is in
 * tests/integration/verify.test.ts.
 */
import {
  all,
  anAdminTokenWhileTheDatabaseIsGone,
  describeOperations,
  instead,
  limiterDown,
  succeeds,
  type Provoke,
} from '../../../../tests/helpers/operation-test-kit.js';
import { STORAGES } from '../../../../tests/helpers/management-storage.js';
import { verifyOperations } from './operations.js';

/** A secret of the right shape that no key has. */
const NOBODY = 'tg_' + 'A'.repeat(43);

/** A key that is not in memory cannot be looked up while the database is gone: on each store. */
const anUnknownKeyWhileTheDatabaseIsGone: Provoke = async (t) => {
  const answers = [];
  for (const kind of Object.keys(STORAGES) as (keyof typeof STORAGES)[]) {
    const harness = await t.harnessOf(kind);
    const call = await t.prepare(harness);
    answers.push(await harness.whileDatabaseGone((app) => call.send({ app, body: { key: NOBODY } })));
  }
  return answers;
};

describeOperations(verifyOperations, {
  verifyKey: {
    valid: async (harness) => ({ body: { key: await harness.secret() } }),
    statuses: {
      // A refusal is an answer: an unknown key is `valid: false`.
      200: all(succeeds, (t) => t.send({ body: { key: NOBODY } })),
      400: { validation_failed: (t) => t.send({ body: { key: 42 } }) },
      503: {
        // The root token needs no database, and a known key is answered from memory: an admin token
        // meets the database that is gone.
        database_unavailable: instead(anAdminTokenWhileTheDatabaseIsGone),
        auth_unavailable: anUnknownKeyWhileTheDatabaseIsGone,
        limit_unavailable: async (t) => {
          const secret = (
            await t.harness.create('/consumer-api-key/create', {
              name: 'limited',
              rateLimitId: await t.harness.plan(),
            })
          ).secret!;
          return t.send({ app: t.harness.appWith({ limiter: limiterDown }), body: { key: secret } });
        },
      },
    },
  },
});
