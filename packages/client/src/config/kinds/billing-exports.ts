/**
 * Billing exports, identified by `type` and `eventName`. The credential is write-only: sent when the
 * export is created, and to one that exists only with --rotate-credentials (or when it holds none);
 * `export` writes it as a `${ENV_VAR}` reference. `interval` and `subject` cannot change in place.
 */
import type { components } from '../../generated/management-api.js';
import { answerOf, everyPage } from '../api-call.js';
import type { BillingExportItem } from '../config-file.js';
import { secretOf } from '../env-references.js';
import type { Kind } from '../kind.js';
import { changedSettings } from '../settings.js';

type BillingExport = components['schemas']['BillingExport'];

/** The variable `export` names for an export's credential: `STRIPE_API_CALLS_CREDENTIAL`. */
export const credentialVariable = (exported: { type: string; eventName: string }): string =>
  `${exported.type}_${exported.eventName}_credential`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');

const withSecret = <T extends { credential?: string | null }>(
  body: T,
  env: Record<string, string | undefined>,
) =>
  typeof body.credential === 'string' ? { ...body, credential: secretOf(body.credential, env).value! } : body;

export const billingExports: Kind<BillingExportItem, BillingExport> = {
  section: 'billingExports',
  noun: 'billing export',
  list: (client) =>
    everyPage(async (cursor) => {
      const page = await answerOf(
        client.GET('/tollgate/billing-exports', { params: { query: { limit: 1000, cursor } } }),
      );
      return { items: page.billingExports, nextCursor: page.nextCursor };
    }),
  identityOfItem: (item) => `${item.type} ${item.eventName}`,
  identityOf: (exported) => `${exported.type} ${exported.eventName}`,
  conflict(item, exported) {
    const fixed = (['interval', 'subject'] as const).filter((field) => item[field] !== exported[field]);
    return fixed.length > 0
      ? `${fixed.join(' and ')} cannot change: delete the export (or use another eventName) to change them`
      : undefined;
  },
  differences(item, exported, options) {
    const declared = item.credential !== undefined;
    const sendCredential = declared && (!exported.hasCredential || options.rotateCredentials);
    return {
      ...changedSettings(
        {
          url: item.url,
          customerField: item.customerField ?? null,
          // Only a stripe-v2 export has a stream; the service answers none for the others.
          ...(item.type === 'stripe-v2' && { streamUrl: item.streamUrl ?? null }),
        },
        { url: exported.url, customerField: exported.customerField, streamUrl: exported.streamUrl ?? null },
      ),
      ...(sendCredential && { credential: item.credential }),
      ...(!declared && exported.hasCredential && { credential: null }),
    };
  },
  secretsOf: (item, patch) =>
    patch === undefined
      ? item.credential === undefined
        ? []
        : [item.credential]
      : typeof patch.credential === 'string'
        ? [patch.credential]
        : [],
  secretField: ['credential'],
  async create(client, item, env) {
    await answerOf(client.POST('/tollgate/billing-exports', { body: withSecret(item, env) }));
  },
  async update(client, exported, patch, env) {
    await answerOf(
      client.PATCH('/tollgate/billing-exports/{billingExportId}', {
        params: { path: { billingExportId: exported.id } },
        body: withSecret(patch, env),
      }),
    );
  },
  async remove(client, exported) {
    await answerOf(
      client.DELETE('/tollgate/billing-exports/{billingExportId}', {
        params: { path: { billingExportId: exported.id } },
      }),
    );
  },
  exported: (exported) => ({
    type: exported.type,
    url: exported.url,
    eventName: exported.eventName,
    interval: exported.interval,
    subject: exported.subject,
    ...(typeof exported.streamUrl === 'string' && { streamUrl: exported.streamUrl }),
    ...(exported.customerField !== null && { customerField: exported.customerField }),
    ...(exported.hasCredential && { credential: `\${${credentialVariable(exported)}}` }),
  }),
};
