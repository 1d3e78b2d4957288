/** The request and response schemas of billing exports (docs/guides/billing-export.md). */
import { Type, type Static } from '@sinclair/typebox';
import { EXPORT_INTERVALS, EXPORT_SUBJECTS, EXPORT_TYPES } from '../../../billing/billing-export.js';
import { Count, IsoTimestamp, NO_NUL, pageFields, strict } from '../../schemas.js';

export const BillingExportId = Type.String({
  pattern: '^bex_[A-Za-z0-9_-]{22}$',
  description: 'Identifier of a billing export',
  examples: ['bex_Yc2xR0f1bW8mT5nYk9Lp4A'],
});

const ExportType = Type.Unsafe<(typeof EXPORT_TYPES)[number]>({
  type: 'string',
  enum: [...EXPORT_TYPES],
  description:
    "stripe: Stripe's v1 meter events, one a request; stripe-v2: Stripe's v2 meter event stream, 100 a request; metronome: Metronome's ingest API, 100 a request; openmeter: CloudEvents to OpenMeter, 100 a request; lago: Lago's batch endpoint, 100 a request; cloudevents: CloudEvents 1.0 to any URL, one a request",
});
const Interval = Type.Unsafe<(typeof EXPORT_INTERVALS)[number]>({
  type: 'string',
  enum: [...EXPORT_INTERVALS],
  description: 'The size of the buckets sent (UTC-aligned)',
});
const Subject = Type.Unsafe<(typeof EXPORT_SUBJECTS)[number]>({
  type: 'string',
  enum: [...EXPORT_SUBJECTS],
  description: 'Whose usage a bucket is: each key, or each consumer',
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  pattern: NO_NUL,
  description:
    'http or https, without user, password, query or fragment: the service base URL (stripe, stripe-v2, metronome, openmeter, lago: the documented path is appended), or the full endpoint (cloudevents)',
  examples: ['https://api.stripe.com'],
});
const StreamUrl = Type.String({
  ...Url,
  description:
    "stripe-v2 only: the base URL of Stripe's meter event stream (Stripe serves it from another host than the sessions); absent or null: `url`",
  examples: ['https://meter-events.stripe.com'],
});
const Credential = Type.String({
  minLength: 1,
  maxLength: 4096,
  pattern: NO_NUL,
  description:
    'Sent as `Authorization: Bearer`: Stripe secret key (stripe-v2: it opens the meter event sessions whose token the stream takes), Metronome API token, Lago API key, OpenMeter token. Write-only: stored encrypted, never answered',
});
const EventName = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: NO_NUL,
  description:
    "Stripe: the meter's event_name; Metronome: the event_type; Lago: the billable metric's code; OpenMeter and CloudEvents: the event type",
});
const CustomerField = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: NO_NUL,
  description:
    "The subject's metadata member that holds the customer id; absent or null: the subject's externalId",
});

export const CreateBillingExportRequest = Type.Object(
  {
    type: ExportType,
    url: Url,
    streamUrl: Type.Optional(Type.Union([StreamUrl, Type.Null()])),
    credential: Type.Optional({
      ...Credential,
      description: `${Credential.description}. Required for stripe, stripe-v2, metronome and lago`,
    }),
    eventName: EventName,
    interval: Interval,
    subject: Subject,
    customerField: Type.Optional(Type.Union([CustomerField, Type.Null()])),
  },
  { ...strict, title: 'CreateBillingExportRequest' },
);

export const UpdateBillingExportRequest = Type.Object(
  {
    url: Type.Optional(Url),
    streamUrl: Type.Optional(Type.Union([StreamUrl, Type.Null()])),
    credential: Type.Optional(
      Type.Union([Credential, Type.Null()], {
        description: `${Credential.description}; null: none (not for stripe, stripe-v2, metronome or lago)`,
      }),
    ),
    eventName: Type.Optional(EventName),
    customerField: Type.Optional(Type.Union([CustomerField, Type.Null()])),
  },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdateBillingExportRequest',
    description:
      'Any of the fields; type, interval and subject are fixed (create another export to change them)',
  },
);

export const BillingExportResponse = Type.Object(
  {
    id: BillingExportId,
    type: ExportType,
    url: Type.String(),
    streamUrl: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: "stripe-v2 only: the meter event stream's base URL; null: `url`",
      }),
    ),
    eventName: Type.String(),
    interval: Interval,
    subject: Subject,
    customerField: Type.Union([Type.String(), Type.Null()]),
    hasCredential: Type.Boolean({ description: 'Whether a credential is stored (it is never answered)' }),
    deliveryFailures: {
      ...Count,
      description:
        'Runs in a row whose receiver did not answer or answered 408, 425, 429 or 5xx; 0 when it works. A Retry-After with a 429 or 5xx holds back every run, manual ones too, until then',
    },
    deliverAfter: Type.Union([IsoTimestamp, Type.Null()], {
      description: 'While the receiver fails: scheduled runs send nothing before this instant (backoff)',
    }),
    createdAt: IsoTimestamp,
    lastUpdated: IsoTimestamp,
  },
  { ...strict, title: 'BillingExport' },
);

export const ListBillingExportsQuery = Type.Object(pageFields, {
  ...strict,
  title: 'ListBillingExportsQuery',
});

export const ListBillingExportsResponse = Type.Object(
  {
    billingExports: Type.Array(BillingExportResponse, { description: 'Oldest first; never a credential' }),
    nextCursor: Type.Optional(Type.String({ description: 'Present when more exports remain' })),
  },
  { ...strict, title: 'ListBillingExportsResponse' },
);

export const DeleteBillingExportResponse = Type.Object(
  { id: BillingExportId, message: Type.String() },
  { ...strict, title: 'DeleteBillingExportResponse' },
);

const RunSend = Type.Object(
  {
    subject: Type.String({ description: 'The key (or consumer) id' }),
    customer: Type.String({ description: 'The customer it was billed to' }),
    bucketStart: IsoTimestamp,
    revision: Type.Integer({
      minimum: 1,
      description: '1: the bucket; 2 and up: corrections for usage that arrived after it was sent',
    }),
    value: Type.Integer({ minimum: 1, description: 'The units this revision adds' }),
    idempotencyId: Type.String({
      description:
        "Stripe's identifier, Metronome's and Lago's transaction_id, the CloudEvent's id: the same on every retry",
    }),
    status: Type.Union([Type.Integer(), Type.Null()], {
      description: "The receiver's HTTP status; null: no answer (timeout, refused or closed connection)",
    }),
    delivered: Type.Boolean({ description: 'The receiver took it (a 2xx, or a duplicate it already held)' }),
    error: Type.Union([Type.String(), Type.Null()], {
      description: 'Why it failed; it is retried under the same idempotencyId',
    }),
  },
  strict,
);

export const BillingExportRun = Type.Object(
  {
    id: Type.String(),
    startedBy: Type.Union([Type.Literal('schedule'), Type.Literal('manual')]),
    startedAt: IsoTimestamp,
    finishedAt: Type.Union([IsoTimestamp, Type.Null()], {
      description: 'null: the replica running it stopped mid-run; its sends are retried',
    }),
    closedBefore: {
      ...IsoTimestamp,
      description: 'Buckets ending at or before this instant were closed for this run',
    },
    planned: {
      ...Count,
      description: 'Sends written for the closed buckets whose usage had not all been sent',
    },
    delivered: Count,
    failed: Count,
    skippedSubjects: Type.Array(Type.String(), {
      description:
        'Subjects with usage but no customer id (at most 100 listed): kept, and sent once they have one',
    }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why the run failed as a whole' }),
    sends: Type.Array(RunSend, { description: 'Each request the run made, oldest bucket first' }),
  },
  { ...strict, title: 'BillingExportRun' },
);

export const ListBillingExportRunsQuery = Type.Object(pageFields, {
  ...strict,
  title: 'ListBillingExportRunsQuery',
});

export const ListBillingExportRunsResponse = Type.Object(
  {
    runs: Type.Array(BillingExportRun, {
      description: 'Newest first; scheduled runs that found nothing to do are not kept',
    }),
    nextCursor: Type.Optional(Type.String({ description: 'Present when more runs remain' })),
  },
  { ...strict, title: 'ListBillingExportRunsResponse' },
);

export type CreateBillingExportRequest = Static<typeof CreateBillingExportRequest>;
export type UpdateBillingExportRequest = Static<typeof UpdateBillingExportRequest>;
export type BillingExportResponse = Static<typeof BillingExportResponse>;
export type ListBillingExportsResponse = Static<typeof ListBillingExportsResponse>;
export type DeleteBillingExportResponse = Static<typeof DeleteBillingExportResponse>;
export type BillingExportRun = Static<typeof BillingExportRun>;
export type ListBillingExportRunsResponse = Static<typeof ListBillingExportRunsResponse>;
