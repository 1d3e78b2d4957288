/**
 * Every status the OpenAPI document lists for finding a key by its secret (key-lookup.ts), and how a
 * caller meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app on the
 * embedded store, checks each answer against the document, and fails when a documented status or code
 * has no block here. What the answers say is in tests/integration/management-key-search.test.ts.
 */
import { AuthThrottle } from '../../../proxy/auth-throttle.js';
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  succeeds,
  whileTheDatabaseIsGone,
  withA65KiBBody,
  withAnotherMethod,
  withATextBody,
  withMalformedJson,
  withoutTheScope,
  withoutValidToken,
  type Provoke,
} from '../../../../tests/helpers/operation-test-kit.js';
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
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: { key_not_found: (t) => t.send({ body: { secret: NOBODY } }) },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: all(afterAFailedAttempt, afterTwoMisses) },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },
});
