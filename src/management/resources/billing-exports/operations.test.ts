/**
 * Every status the OpenAPI document lists for each billing export operation (billing-exports.ts), and
 * how a caller meets it. The kit (tests/helpers/operation-test-kit.ts) runs each block against an app
 * on the embedded store, checks each answer against the document, and fails when a documented status
 * or code has no block here.
 */
import { BillingExportRepository } from '../../../billing/export-repository.js';
import {
  afterAFailedAttempt,
  all,
  describeOperations,
  succeeds,
  whileTheDatabaseIsGone,
  whileWritesAreRefused,
  withA65KiBBody,
  withAnotherMethod,
  withAnUndecodableId,
  withATextBody,
  withMalformedJson,
  withoutTheScope,
  withoutValidToken,
  type Harness,
} from '../../../../tests/helpers/operation-test-kit.js';
import { billingExportOperations } from './operations.js';

/**
 * A CloudEvents receiver where nothing listens: a run with no usage stored sends nothing, so no call
 * here reaches it.
 */
const CLOUDEVENTS = {
  type: 'cloudevents',
  url: 'http://127.0.0.1:9/events',
  eventName: 'api_requests',
  interval: 'hour',
  subject: 'consumer',
};
const UNKNOWN_EXPORT = { billingExportId: 'bex_' + 'A'.repeat(22) };

/** A new export; its id. */
async function billingExport(harness: Harness): Promise<string> {
  return (await harness.create('/tollgate/billing-exports', CLOUDEVENTS)).id!;
}

const exportParams = async (harness: Harness) => ({
  params: { billingExportId: await billingExport(harness) },
});

describeOperations(billingExportOperations, {
  createBillingExport: {
    valid: () => ({ body: CLOUDEVENTS }),
    statuses: {
      201: async (t) => {
        const res = await t.send({ body: { ...CLOUDEVENTS, credential: 'a-receiver-token' } });
        // Write-only: the answer says there is one, never what it is.
        expect(res.body.hasCredential).toBe(true);
        expect(JSON.stringify(res.body)).not.toContain('a-receiver-token');
        return res;
      },
      400: {
        // Stripe needs its secret key; a URL may not carry a query.
        validation_failed: all(
          (t) => t.send({ body: { ...CLOUDEVENTS, type: 'stripe', url: 'https://api.stripe.com' } }),
          (t) => t.send({ body: { ...CLOUDEVENTS, url: 'http://127.0.0.1:9/events?token=x' } }),
        ),
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  listBillingExports: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { limit: '0' } }),
        invalid_cursor: (t) => t.send({ query: { cursor: 'not-issued-here' } }),
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },

  getBillingExport: {
    valid: exportParams,
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        billing_export_not_found: all((t) => t.send({ params: UNKNOWN_EXPORT }), withAnUndecodableId),
      },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },

  updateBillingExport: {
    valid: async (harness) => ({ ...(await exportParams(harness)), body: { eventName: 'api_calls' } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { url: 'https://user:password@127.0.0.1/events' } }),
        invalid_json: withMalformedJson,
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        billing_export_not_found: all((t) => t.send({ params: UNKNOWN_EXPORT }), withAnUndecodableId),
      },
      405: { method_not_allowed: withAnotherMethod },
      413: { payload_too_large: withA65KiBBody },
      415: { unsupported_media_type: withATextBody },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  deleteBillingExport: {
    valid: exportParams,
    statuses: {
      200: succeeds,
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        billing_export_not_found: all((t) => t.send({ params: UNKNOWN_EXPORT }), withAnUndecodableId),
      },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },

  listBillingExportRuns: {
    valid: exportParams,
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ query: { limit: '0' } }),
        invalid_cursor: (t) => t.send({ query: { cursor: 'not-issued-here' } }),
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        billing_export_not_found: all((t) => t.send({ params: UNKNOWN_EXPORT }), withAnUndecodableId),
      },
      405: { method_not_allowed: withAnotherMethod },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone },
    },
  },

  runBillingExport: {
    valid: exportParams,
    statuses: {
      201: async (t) => {
        const res = await t.send();
        // No usage is stored: the run plans nothing and sends nothing.
        expect(res.body).toMatchObject({ startedBy: 'manual', planned: 0, delivered: 0, failed: 0 });
        return res;
      },
      401: { unauthorized: withoutValidToken },
      403: { insufficient_scope: withoutTheScope },
      404: {
        billing_export_not_found: all((t) => t.send({ params: UNKNOWN_EXPORT }), withAnUndecodableId),
      },
      405: { method_not_allowed: withAnotherMethod },
      // Another replica holds the export's lease: it is running it.
      409: {
        billing_export_busy: async (t) => {
          const { params } = await exportParams(t.harness);
          const leases = new BillingExportRepository(t.harness.db);
          expect(await leases.takeLease(params.billingExportId, 'another-replica', 60_000)).toBe(true);
          const res = await t.send({ params });
          expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
          return res;
        },
      },
      429: { too_many_failed_attempts: afterAFailedAttempt },
      503: { database_unavailable: whileTheDatabaseIsGone, storage_unavailable: whileWritesAreRefused },
    },
  },
});
