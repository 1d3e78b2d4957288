/**
 * A configuration file as `tollgate apply` reads it (docs/guides/configuration-as-code.md): per section,
 * a list of the bodies the create calls take. packages/client/config-schema.json is its JSON Schema.
 */
import type { components } from '../generated/management-api.js';

type Schemas = components['schemas'];

export type PlanItem = Schemas['CreatePlanRequest'];
export type RouteItem = Schemas['CreateRouteRequest'];
/** A consumer as declared: its `externalId` identifies it, so it is required. */
export type ConsumerItem = Schemas['CreateConsumerRequest'] & { externalId: string };
export type WebhookItem = Schemas['CreateWebhookRequest'];
/** A billing export as declared: `credential` is a `${ENV_VAR}` reference. */
export type BillingExportItem = Schemas['CreateBillingExportRequest'];
/** The portal's settings as declared: `oidc.clientSecret` is a `${ENV_VAR}` reference. */
export type PortalItem = Schemas['UpdatePortalSettingsRequest'];

export interface ConfigFile {
  plans?: PlanItem[];
  routes?: RouteItem[];
  consumers?: ConsumerItem[];
  webhooks?: WebhookItem[];
  billingExports?: BillingExportItem[];
  /** One object, not a list: the service always holds the portal's settings. */
  portal?: PortalItem;
}

export type Section = keyof ConfigFile;
/** The sections that list objects, each named by its identity. */
export type ListSection = Exclude<Section, 'portal'>;

/** A place in the file: section, index, fields. */
export type FieldPath = readonly (string | number)[];

/** `plans[0].limits[1].period`, as errors name a field. */
export function fieldName(path: FieldPath): string {
  return path.reduce<string>(
    (name, part) => (typeof part === 'number' ? `${name}[${part}]` : name === '' ? part : `${name}.${part}`),
    '',
  );
}
