/**
 * The statuses of a verify call (operations.ts) that are its own, and how a caller meets each, through
 * the management app (the public server answers the same call on its own path: route.ts). The kit
 * (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived from its
 * definition, runs each block against an app on the embedded store, checks each answer against the
 * document, and fails when a documented status or code has no way to it. What the decisions say is in
 * tests/integration/verify.test.ts, and of settling in tests/integration/verify-settle.test.ts.
 */
import request from 'supertest';
import {
  all,
  anAdminTokenWhileTheDatabaseIsGone,
  describeOperations,
  instead,
  limiterDown,
  succeeds,
  type Harness,
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

/** A reservation of 10 units of a key on a plan, made by verify on `harness`'s app; its id. */
async function reservation(harness: Harness): Promise<string> {
  const key = await harness.create('/consumer-api-key/create', {
    name: 'reserving',
    rateLimitId: await harness.plan(),
  });
  const token = await harness.token(['keys:verify']);
  const answer = await request(harness.app)
    .post('/tollgate/verify')
    .set('Authorization', `Bearer ${token.secret}`)
    .send({ key: key.secret, reserve: 10 });
  expect(answer.body).toMatchObject({ valid: true, reservationId: expect.any(String) });
  return answer.body.reservationId as string;
}

describeOperations(verifyOperations, {
  settleVerifiedRequest: {
    valid: async (harness) => ({ body: { reservationId: await reservation(harness), units: 3 } }),
    statuses: {
      200: succeeds,
      400: { validation_failed: (t) => t.send({ body: { reservationId: 'rsv_x', units: -1 } }) },
      404: {
        // Unknown, and settled already.
        reservation_not_found: async (t) => {
          const call = await t.prepare();
          await call.send();
          return [await call.send(), await t.send({ body: { reservationId: 'rsv_unknown', units: 1 } })];
        },
      },
      503: {
        database_unavailable: instead(anAdminTokenWhileTheDatabaseIsGone),
        // Reserved where the limiter answers, settled where it does not.
        limit_unavailable: async (t) =>
          t.send({
            app: t.harness.appWith({ limiter: limiterDown }),
            body: { reservationId: await reservation(t.harness), units: 3 },
          }),
      },
    },
  },
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
