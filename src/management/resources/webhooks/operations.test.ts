/**
 * The statuses of each webhook operation (operations.ts) that are its own, and how a caller meets each.
 * The kit (tests/helpers/operation-test-kit.ts) adds the refusals every operation shares, derived from
 * its definition, runs each block against an app on the embedded store, checks each answer against the
 * document, and fails when a documented status or code has no way to it.
 */
import { DeliveryRepository } from '../../../store/delivery-repository.js';
import {
  all,
  describeOperations,
  type Harness,
  succeeds,
} from '../../../../tests/helpers/operation-test-kit.js';
import { webhookOperations } from './operations.js';

/** Nothing listens there, and nothing here sends a delivery: the delivery worker does not run. */
const RECEIVER = 'http://127.0.0.1:9/hooks';
const UNKNOWN_WEBHOOK = { webhookId: 'whk_' + 'A'.repeat(22) };
const UNKNOWN_DELIVERY = { deliveryId: 'dlv_' + 'A'.repeat(22) };

/** A new webhook for keys created; its id. */
async function webhook(harness: Harness): Promise<string> {
  return (await harness.create('/tollgate/webhooks', { url: RECEIVER, events: ['key.created'] })).id!;
}

/**
 * A webhook and one delivery in its log: a key created, and its event fanned out as the delivery
 * worker does before it sends.
 */
async function delivery(harness: Harness): Promise<{ webhookId: string; deliveryId: string }> {
  const webhookId = await webhook(harness);
  await harness.key();
  await harness.db.transaction().execute((trx) => new DeliveryRepository(trx).fanOut(new Date(), 1_000));
  const [made] = await new DeliveryRepository(harness.db).list(webhookId, undefined, 1);
  return { webhookId, deliveryId: made!.id };
}

describeOperations(webhookOperations, {
  createWebhook: {
    valid: () => ({ body: { url: RECEIVER, events: ['key.created', 'consumer.deleted'] } }),
    statuses: {
      201: succeeds,
      400: {
        // An event there is not, and a URL the schema takes where only http: and https: may be.
        validation_failed: all(
          (t) => t.send({ body: { url: RECEIVER, events: ['key.exploded'] } }),
          (t) => t.send({ body: { url: 'ftp://127.0.0.1/hooks', events: ['key.created'] } }),
        ),
      },
    },
  },

  listWebhooks: {
    valid: () => ({}),
    statuses: {
      200: succeeds,
    },
  },

  getWebhook: {
    valid: async (harness) => ({ params: { webhookId: await webhook(harness) } }),
    statuses: {
      200: succeeds,
      404: { webhook_not_found: (t) => t.send({ params: UNKNOWN_WEBHOOK }) },
    },
  },

  updateWebhook: {
    valid: async (harness) => ({ params: { webhookId: await webhook(harness) }, body: { enabled: false } }),
    statuses: {
      200: succeeds,
      400: {
        validation_failed: (t) => t.send({ body: { url: 'https://user:password@example.com/hooks' } }),
      },
      404: { webhook_not_found: (t) => t.send({ params: UNKNOWN_WEBHOOK }) },
    },
  },

  deleteWebhook: {
    valid: async (harness) => ({ params: { webhookId: await webhook(harness) } }),
    statuses: {
      200: succeeds,
      404: { webhook_not_found: (t) => t.send({ params: UNKNOWN_WEBHOOK }) },
    },
  },

  rotateWebhookSecret: {
    valid: async (harness) => ({ params: { webhookId: await webhook(harness) } }),
    statuses: {
      // A new secret, shown once; the audit log records the rotation and never a secret.
      200: async (t) => {
        const created = await t.harness.create('/tollgate/webhooks', {
          url: RECEIVER,
          events: ['key.created'],
        });
        const res = await t.send({ params: { webhookId: created.id! } });
        expect(res.body.secret).toMatch(/^whsec_/);
        expect(res.body.secret).not.toBe(created.secret);
        const audit = await t.send({ method: 'get', path: `/tollgate/audit-log?targetId=${created.id!}` });
        expect(audit.body.auditLog.map((e: { action: string }) => e.action)).toEqual([
          'webhook.rotate_secret',
          'webhook.create',
        ]);
        expect(JSON.stringify(audit.body)).not.toContain(res.body.secret.slice(6));
        return res;
      },
      404: { webhook_not_found: (t) => t.send({ params: UNKNOWN_WEBHOOK }) },
    },
  },

  listWebhookDeliveries: {
    valid: async (harness) => ({ params: { webhookId: (await delivery(harness)).webhookId } }),
    statuses: {
      200: async (t) => {
        const res = await t.send();
        expect(res.body.deliveries).toEqual([
          expect.objectContaining({ type: 'key.created', state: 'pending' }),
        ]);
        return res;
      },
      404: { webhook_not_found: (t) => t.send({ params: UNKNOWN_WEBHOOK }) },
    },
  },

  retryWebhookDelivery: {
    valid: async (harness) => ({ params: await delivery(harness) }),
    statuses: {
      200: succeeds,
      404: {
        webhook_not_found: (t) => t.send({ params: UNKNOWN_WEBHOOK }),
        delivery_not_found: (t) => t.send({ params: UNKNOWN_DELIVERY }),
      },
      // A disabled webhook sends nothing, a retry neither.
      409: {
        webhook_disabled: async (t) => {
          const params = await delivery(t.harness);
          const disabled = await t.send({
            method: 'patch',
            path: `/tollgate/webhooks/${params.webhookId}`,
            body: { enabled: false },
          });
          expect(disabled.body).toMatchObject({ enabled: false });
          return t.send({ params });
        },
      },
    },
  },
});
