/** A billing export as configured (docs/guides/billing-export.md): where closed usage buckets go, and how. */

export const EXPORT_TYPES = ['stripe', 'stripe-v2', 'metronome', 'openmeter', 'lago', 'cloudevents'] as const;
export type ExportType = (typeof EXPORT_TYPES)[number];

/** The bucket sizes an export sends: granularities of usage over time (src/usage/granularity.ts). */
export const EXPORT_INTERVALS = ['minute', 'hour', 'day'] as const;
export type ExportInterval = (typeof EXPORT_INTERVALS)[number];

/** Whose usage a bucket is: one key's, or one consumer's (all its keys). */
export const EXPORT_SUBJECTS = ['consumer', 'key'] as const;
export type ExportSubject = (typeof EXPORT_SUBJECTS)[number];

/** Types whose service always wants a credential; the others send one only when it is set. */
export const CREDENTIAL_REQUIRED: ReadonlySet<ExportType> = new Set([
  'stripe',
  'stripe-v2',
  'metronome',
  'lago',
]);

export interface BillingExport {
  readonly id: string;
  readonly type: ExportType;
  /** The service's base URL (Stripe, Metronome, OpenMeter, Lago), or the full endpoint (CloudEvents). */
  readonly url: string;
  /** stripe-v2: the meter event stream's base URL (Stripe serves it from another host); null: `url`. */
  readonly streamUrl: string | null;
  /** AES-256-GCM like a key's secret; null: none. */
  readonly credentialCiphertext: Uint8Array | null;
  readonly eventName: string;
  readonly interval: ExportInterval;
  readonly subject: ExportSubject;
  /** The subject's metadata member that holds the customer id; null: its `externalId`. */
  readonly customerField: string | null;
  readonly createdAt: Date;
  readonly lastUpdated: Date;
  /** Scheduled runs send nothing before this instant (the receiver was failing); null: no wait. */
  readonly deliverAfter: Date | null;
  readonly deliveryFailures: number;
  /** The receiver asked to wait (Retry-After): no run, scheduled or manual, sends before this instant. */
  readonly retryAfter: Date | null;
}

/** What an administrator sets on an export after creating it; type, interval and subject are fixed. */
export interface BillingExportChanges {
  readonly url?: string;
  readonly streamUrl?: string | null;
  readonly credentialCiphertext?: Uint8Array | null;
  readonly eventName?: string;
  readonly customerField?: string | null;
}
