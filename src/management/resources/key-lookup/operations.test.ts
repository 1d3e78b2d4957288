/**
 * The statuses of finding a key by its secret (operations.ts) that are its own, and how a caller meets
 * each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived
 * from its definition, runs each block against an app on the embedded store, checks each answer against
 * the document, and fails when a documented status or code has no way to it. What the answers say is in
 * tests/integration/management-key-search.test.ts.
 */
import { AuthThrottle } from '../../../proxy/auth-throttle.js';
import { describeOperations, type Provoke, succeeds } from '../../../../tests/helpers/operation-test-kit.js';
import { keyLookupOperations } from './operations.js';

/** A secret of the right shape that no key has. */
const NOBODY = 'tg_' + 'A'.repeat(43);

/** Two secrets that open nothing spend a budget of two: the next lookup is refused, a right secret too. */
const afterTwoMisses: Provoke = async (t) => {
  const app = t.harness.appWith({ throttle: new AuthThrottle({ limit: 2, period: 'minute' }) });
  const call = await t.prepare();
  for (let i = 0; i < 2; i++) expect((await call.send({ app, body: { secret: NOBODY } })).status).toBe(404);
  const throttled = await call.send({ app });
  expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
  return throttled;
};

describeOperations(keyLookupOperations, {
  lookupConsumerApiKey: {
    valid: async (harness) => ({ body: { secret: await harness.secret() } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { secret: 'not a secret' } }),
      },
      404: { key_not_found: (t) => t.send({ body: { secret: NOBODY } }) },
      429: { too_many_failed_attempts: afterTwoMisses },
    },
  },
});
