/**
 * The statuses of each portal operation (operations.ts) that are its own, and how a caller meets each.
 * The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares.
 */
import {
  all,
  describeOperations,
  type Harness,
  succeeds,
  uniqueId,
} from '../../../../tests/helpers/operation-test-kit.js';
import { portalOperations } from './operations.js';

const UNKNOWN_CONSUMER = 'con_' + 'A'.repeat(22);
const UNKNOWN_SESSION = { sessionId: 'pss_' + 'A'.repeat(22) };

const enabledPortal = (harness: Harness) => harness.change('/tollgate/portal/settings', { enabled: true });

/** A sign-in link for a user of a new consumer; the session's id. */
async function session(harness: Harness): Promise<string> {
  await enabledPortal(harness);
  const consumerId = await harness.consumer();
  return (await harness.create('/tollgate/portal/sessions', { consumerId, user: { id: 'u1' } })).sessionId!;
}

describeOperations(portalOperations, {
  getPortalSettings: {
    valid: () => ({}),
    statuses: {
      200: async (t) => {
        const res = await t.send();
        expect(res.body).toMatchObject({
          enabled: false,
          maxKeysPerConsumer: 5,
          publicPlans: [],
          oidc: null,
        });
        return res;
      },
    },
  },

  updatePortalSettings: {
    valid: () => ({ body: { enabled: true, title: uniqueId('Acme API'), accentColor: '#112233' } }),
    statuses: {
      200: async (t) => {
        const res = await t.send({
          body: {
            oidc: {
              issuer: 'https://id.example.com',
              clientId: 'portal',
              clientSecret: 'client-secret-value',
              claim: 'org_id',
              match: 'externalId',
            },
          },
        });
        expect(res.body.oidc).toMatchObject({ clientSecretSet: true });
        expect(JSON.stringify(res.body)).not.toContain('client-secret-value');
        return res;
      },
      400: {
        validation_failed: all(
          (t) => t.send({ body: { maxKeysPerConsumer: 101 } }),
          (t) => t.send({ body: { accentColor: 'red' } }),
          // The portal's pages load no image over http from another origin.
          (t) => t.send({ body: { logoUrl: 'http://cdn.acme.example/logo.svg' } }),
          // The first OIDC settings need their secret.
          async (t) => {
            const call = await t.prepare();
            await t.harness.change('/tollgate/portal/settings', { oidc: null });
            return call.send({
              body: {
                oidc: { issuer: 'https://id.example.com', clientId: 'c', claim: 'sub', match: 'externalId' },
              },
            });
          },
        ),
      },
      404: { rate_limit_not_found: (t) => t.send({ body: { publicPlans: ['no-such-plan'] } }) },
    },
  },

  fetchPortalApiReference: {
    valid: async (harness) => {
      const settings = await harness.change('/tollgate/portal/settings', {
        apiReference: { url: 'http://127.0.0.1:9/openapi.json' },
      });
      expect(settings.apiReference).toMatchObject({ fetchedAt: null, fetchError: expect.any(String) });
      return {};
    },
    statuses: {
      200: async (t) => {
        const res = await t.send();
        expect(res.body).toMatchObject({
          fetchedAt: null,
          fetchError: 'could not fetch the document',
        });
        return res;
      },
      404: {
        not_found: async (t) => {
          const call = await t.prepare();
          await t.harness.change('/tollgate/portal/settings', { apiReference: null });
          return call.send();
        },
      },
    },
  },

  createPortalSession: {
    valid: async (harness) => {
      await enabledPortal(harness);
      return { body: { consumerId: await harness.consumer(), user: { id: 'u1', email: 'a@example.com' } } };
    },
    statuses: {
      201: async (t) => {
        const res = await t.send();
        expect(res.body.url).toMatch(/\/tollgate\/portal\/sign-in\?code=[A-Za-z0-9_-]{43}$/);
        return res;
      },
      400: {
        validation_failed: (t) =>
          t.send({ body: { consumerId: UNKNOWN_CONSUMER, user: { id: 'u' }, ttlSeconds: 60 } }),
      },
      404: {
        consumer_not_found: (t) => t.send({ body: { consumerId: UNKNOWN_CONSUMER, user: { id: 'u' } } }),
      },
      409: {
        portal_disabled: async (t) => {
          const call = await t.prepare();
          await t.harness.change('/tollgate/portal/settings', { enabled: false });
          return call.send();
        },
      },
    },
  },

  listPortalSessions: {
    valid: async (harness) => {
      await session(harness);
      return {};
    },
    statuses: {
      200: async (t) => {
        const res = await t.send();
        expect(res.body.sessions).toEqual(
          expect.arrayContaining([expect.objectContaining({ signedIn: false, user: { id: 'u1' } })]),
        );
        return res;
      },
      400: { validation_failed: (t) => t.send({ query: { consumerId: 'not-a-consumer' } }) },
    },
  },

  deletePortalSession: {
    valid: async (harness) => ({ params: { sessionId: await session(harness) } }),
    statuses: {
      200: succeeds,
      404: { session_not_found: (t) => t.send({ params: UNKNOWN_SESSION }) },
    },
  },
});
