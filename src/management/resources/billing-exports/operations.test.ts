/**
 * The statuses of each billing export operation (operations.ts) that are its own, and how a caller
 * meets each. The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares,
 * derived from its definition, runs each block against an app on the embedded store, checks each answer
 * against the document, and fails when a documented status or code has no way to it.
 */
import { BillingExportRepository } from '../../../billing/export-repository.js';
import {
  all,
  describeOperations,
  type Harness,
  succeeds,
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
      },
    },
  },

  listBillingExports: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
    },
  },

  getBillingExport: {
    valid: exportParams,
    statuses: {
      200: succeeds,
      404: {
        billing_export_not_found: (t) => t.send({ params: UNKNOWN_EXPORT }),
      },
    },
  },

  updateBillingExport: {
    valid: async (harness) => ({ ...(await exportParams(harness)), body: { eventName: 'api_calls' } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { url: 'https://user:password@127.0.0.1/events' } }),
      },
      404: {
        billing_export_not_found: (t) => t.send({ params: UNKNOWN_EXPORT }),
      },
    },
  },

  deleteBillingExport: {
    valid: exportParams,
    statuses: {
      200: succeeds,
      404: {
        billing_export_not_found: (t) => t.send({ params: UNKNOWN_EXPORT }),
      },
    },
  },

  listBillingExportRuns: {
    valid: exportParams,
    statuses: {
      200: succeeds,
      404: {
        billing_export_not_found: (t) => t.send({ params: UNKNOWN_EXPORT }),
      },
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
      404: {
        billing_export_not_found: (t) => t.send({ params: UNKNOWN_EXPORT }),
      },
      // Another replica holds the export's lease: it is running it.
      409: {
        billing_export_busy: async (t) => {
          const { params } = await exportParams(t.harness);
          const leases = new BillingExportRepository(t.harness.db);
          expect(await leases.takeLease(params.billingExportId, 'another-replica', new Date(), 60_000)).toBe(
            true,
          );
          const res = await t.send({ params });
          expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
          return res;
        },
      },
    },
  },
});
