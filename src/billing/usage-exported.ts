/**
 * `usage.exported` (docs/guides/webhooks.md, docs/guides/billing-export.md): one revision of one bucket taken by the receiver, written to
 * the outbox in the transaction that records the delivery, so a send delivered is told once. `data`
 * names what was exported and never the export's credential.
 */
import { ID_FIELDS } from '../plans/subject.js';
import { isoSeconds } from '../plans/window.js';
import type { NewEvent } from '../store/outbox.js';
import type { BillingExport } from './billing-export.js';
import type { UsageSend } from './usage-send.js';

export function usageExportedEvent(billingExport: BillingExport, send: UsageSend, at: Date): NewEvent {
  return {
    type: 'usage.exported',
    at,
    data: JSON.stringify({
      exportId: billingExport.id,
      exportType: billingExport.type,
      eventName: billingExport.eventName,
      interval: billingExport.interval,
      subject: send.subject,
      [ID_FIELDS[send.subject]]: send.subjectId,
      customer: send.customer,
      bucket: { start: isoSeconds(send.bucketStartMs), end: isoSeconds(send.bucketEndMs) },
      revision: send.revision,
      value: send.units,
      idempotencyId: send.idempotencyId,
    }),
  };
}
