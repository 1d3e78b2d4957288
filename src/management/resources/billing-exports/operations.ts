/** Billing exports: usage sent to Stripe, OpenMeter, Lago or CloudEvents, exactly once to the unit (docs/guides/billing-export.md). */
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { CREDENTIAL_REQUIRED, type BillingExport, type ExportType } from '../../../billing/billing-export.js';
import type { RunRecord } from '../../../billing/ledger-repository.js';
import { AppError } from '../../../errors.js';
import { encryptSecret } from '../../../keys/secret.js';
import { billingExportAudit } from '../../audit-views.js';
import {
  BillingExportId,
  BillingExportResponse,
  BillingExportRun,
  CreateBillingExportRequest,
  DeleteBillingExportResponse,
  ListBillingExportRunsQuery,
  ListBillingExportRunsResponse,
  ListBillingExportsQuery,
  ListBillingExportsResponse,
  UpdateBillingExportRequest,
} from './schemas.js';
import { defineOperation } from '../../operation.js';
import { pageOf, positionAfter } from '../../pages.js';
import { DEFAULT_PAGE_SIZE, type ValidationDetail } from '../../schemas.js';
import { isoTimestamp } from '../../time-format.js';

const TAG = 'Billing exports';
const EXPORTS_PATH = '/tollgate/billing-exports';
const EXPORT_PATH = `${EXPORTS_PATH}/:billingExportId`;
const RUNS_PATH = `${EXPORT_PATH}/runs`;
const exportParams = {
  schema: Type.Object({
    billingExportId: { ...BillingExportId, description: 'The billing export id (`id`)' },
  }),
  notFound: 'billing_export_not_found',
} as const;
const NOT_FOUND = { billing_export_not_found: 'No billing export has that id' } as const;
/** A page of the run log continues after a run's sequence number. */
const RUN_SEQUENCE = /^[0-9]{1,16}$/;

/**
 * A URL an export may send to: http or https, with nothing in it that is a secret or that the
 * documented path could not follow (user, password, query, fragment); the URL is answered and logged.
 */
function urlProblems(url: string | undefined | null, field = 'url'): ValidationDetail[] {
  if (url === undefined || url === null) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [{ field, message: 'must be an absolute URL' }];
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return [{ field, message: 'must use http or https' }];
  if (parsed.username !== '' || parsed.password !== '')
    return [{ field, message: 'must not carry a user or password: send it as credential' }];
  if (parsed.search !== '' || parsed.hash !== '')
    return [{ field, message: 'must not carry a query string or fragment' }];
  return [];
}

/** Only Stripe's v2 stream is served from a host of its own. */
const streamUrlProblems = (type: ExportType, streamUrl: string | null | undefined): ValidationDetail[] =>
  streamUrl !== undefined && streamUrl !== null && type !== 'stripe-v2'
    ? [{ field: 'streamUrl', message: 'is only for stripe-v2 exports' }]
    : urlProblems(streamUrl, 'streamUrl');

const credentialMissing = (type: ExportType): ValidationDetail => ({
  field: 'credential',
  message: `is required for ${type} exports`,
});

function exportView(e: BillingExport): BillingExportResponse {
  return {
    id: e.id,
    type: e.type,
    url: e.url,
    ...(e.type === 'stripe-v2' && { streamUrl: e.streamUrl }),
    eventName: e.eventName,
    interval: e.interval,
    subject: e.subject,
    customerField: e.customerField,
    hasCredential: e.credentialCiphertext !== null,
    deliveryFailures: e.deliveryFailures,
    deliverAfter: e.deliverAfter === null ? null : isoTimestamp(e.deliverAfter),
    createdAt: isoTimestamp(e.createdAt),
    lastUpdated: isoTimestamp(e.lastUpdated),
  };
}

function runView(run: RunRecord): BillingExportRun {
  return {
    id: run.id,
    startedBy: run.startedBy,
    startedAt: isoTimestamp(run.startedAt),
    finishedAt: run.finishedAt === null ? null : isoTimestamp(run.finishedAt),
    closedBefore: isoTimestamp(run.closedBefore),
    planned: run.planned,
    delivered: run.delivered,
    failed: run.failed,
    skippedSubjects: run.skippedSubjects,
    error: run.error,
    sends: run.attempts.map((a) => ({
      subject: a.subjectId,
      customer: a.customer,
      bucketStart: isoTimestamp(a.bucketStartMs),
      revision: a.revision,
      value: a.units,
      idempotencyId: a.idempotencyId,
      status: a.status,
      delivered: a.delivered,
      error: a.error,
    })),
  };
}

export const billingExportOperations = [
  defineOperation({
    id: 'createBillingExport',
    method: 'post',
    path: EXPORTS_PATH,
    scope: 'billing:write',
    tag: TAG,
    summary: 'Export usage to Stripe, Metronome, OpenMeter, Lago or a CloudEvents receiver',
    description:
      'From the bucket it is created in, every closed bucket of `interval` with usage is sent once per subject to the customer named by its `externalId` (or its metadata member `customerField`): the value is its units; usage that arrives after its bucket was sent is sent as a correction (the next revision). `credential` is stored encrypted and never answered.',
    body: {
      schema: CreateBillingExportRequest,
      check: (body) => [
        ...urlProblems(body.url),
        ...streamUrlProblems(body.type, body.streamUrl),
        ...(CREDENTIAL_REQUIRED.has(body.type) && body.credential === undefined
          ? [credentialMissing(body.type)]
          : []),
      ],
    },
    success: {
      status: 201,
      description: 'Created',
      schema: BillingExportResponse,
      headers: { Location: 'Path of the export' },
    },
    async handle({ body, res, ctx }) {
      const id = 'bex_' + randomBytes(16).toString('base64url');
      const created = await ctx.audited(res, async ({ billingExports }) => {
        await billingExports.insert({
          id,
          type: body.type,
          url: body.url,
          streamUrl: body.streamUrl ?? null,
          credentialCiphertext:
            body.credential === undefined ? null : encryptSecret(body.credential, ctx.sealingKey),
          eventName: body.eventName,
          interval: body.interval,
          subject: body.subject,
          customerField: body.customerField ?? null,
          createdAt: ctx.now(),
        });
        const after = (await billingExports.get(id))!;
        return {
          result: after,
          action: 'billing_export.create',
          target: { type: 'billing_export', id },
          before: null,
          after: billingExportAudit(after),
        };
      });
      res.status(201).location(`${ctx.prefix}${EXPORTS_PATH}/${id}`).json(exportView(created));
    },
  }),

  defineOperation({
    id: 'listBillingExports',
    method: 'get',
    path: EXPORTS_PATH,
    scope: 'billing:read',
    tag: TAG,
    summary: 'List billing exports, oldest first (never their credentials)',
    query: { schema: ListBillingExportsQuery },
    success: { status: 200, description: 'One page of exports', schema: ListBillingExportsResponse },
    async handle({ query, res, ctx }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const rows = await ctx.billingExports.list(positionAfter(query.cursor), limit + 1);
      const { items, nextCursor } = pageOf(rows, limit, (e) => ({ at: e.createdAt.getTime(), id: e.id }));
      const body: ListBillingExportsResponse = {
        billingExports: items.map(exportView),
        ...(nextCursor !== undefined && { nextCursor }),
      };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'getBillingExport',
    method: 'get',
    path: EXPORT_PATH,
    scope: 'billing:read',
    tag: TAG,
    summary: 'Show a billing export (never its credential)',
    params: exportParams,
    success: { status: 200, description: 'The export', schema: BillingExportResponse },
    errors: NOT_FOUND,
    async handle({ params, res, ctx }) {
      const found = await ctx.billingExports.get(params.billingExportId);
      if (!found) throw new AppError('billing_export_not_found');
      res.json(exportView(found));
    },
  }),

  defineOperation({
    id: 'updateBillingExport',
    method: 'patch',
    path: EXPORT_PATH,
    scope: 'billing:write',
    tag: TAG,
    summary: 'Change where and as what an export sends: url, streamUrl, credential, eventName, customerField',
    description:
      'The next run sends with the new settings; what was sent stays sent. `type`, `interval` and `subject` are fixed.',
    params: exportParams,
    body: {
      schema: UpdateBillingExportRequest,
      check: (body) => [...urlProblems(body.url), ...urlProblems(body.streamUrl, 'streamUrl')],
    },
    success: { status: 200, description: 'The export as it now is', schema: BillingExportResponse },
    errors: NOT_FOUND,
    async handle({ params, body, res, ctx }) {
      const id = params.billingExportId;
      const updated = await ctx.audited(res, async ({ billingExports }) => {
        const before = await billingExports.get(id, true);
        if (!before) throw new AppError('billing_export_not_found');
        const [streamUrlProblem] = streamUrlProblems(before.type, body.streamUrl);
        if (streamUrlProblem)
          throw new AppError(
            'validation_failed',
            `The request is not valid: streamUrl ${streamUrlProblem.message}`,
            [streamUrlProblem],
          );
        if (body.credential === null && CREDENTIAL_REQUIRED.has(before.type)) {
          const detail = credentialMissing(before.type);
          throw new AppError('validation_failed', `The request is not valid: credential ${detail.message}`, [
            detail,
          ]);
        }
        const after = (await billingExports.update(
          id,
          {
            ...(body.url !== undefined && { url: body.url }),
            ...(body.streamUrl !== undefined && { streamUrl: body.streamUrl }),
            ...(body.credential !== undefined && {
              credentialCiphertext:
                body.credential === null ? null : encryptSecret(body.credential, ctx.sealingKey),
            }),
            ...(body.eventName !== undefined && { eventName: body.eventName }),
            ...(body.customerField !== undefined && { customerField: body.customerField }),
          },
          ctx.now(),
        ))!;
        return {
          result: after,
          action: 'billing_export.update',
          target: { type: 'billing_export', id },
          before: billingExportAudit(before),
          after: billingExportAudit(after),
        };
      });
      res.json(exportView(updated));
    },
  }),

  defineOperation({
    id: 'deleteBillingExport',
    method: 'delete',
    path: EXPORT_PATH,
    scope: 'billing:write',
    tag: TAG,
    summary: 'Delete a billing export, its run log and the sends it has not delivered',
    params: exportParams,
    success: { status: 200, description: 'Deleted', schema: DeleteBillingExportResponse },
    errors: NOT_FOUND,
    async handle({ params, res, ctx }) {
      const id = params.billingExportId;
      await ctx.audited(res, async ({ billingExports }) => {
        const before = await billingExports.get(id, true);
        if (!before || !(await billingExports.delete(id))) throw new AppError('billing_export_not_found');
        return {
          result: undefined,
          action: 'billing_export.delete',
          target: { type: 'billing_export', id },
          before: billingExportAudit(before),
          after: null,
        };
      });
      const body: DeleteBillingExportResponse = { id, message: `Billing export ${id} has been deleted` };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'listBillingExportRuns',
    method: 'get',
    path: RUNS_PATH,
    scope: 'billing:read',
    tag: TAG,
    summary: 'The run log of an export, newest first: what each run sent and what the receiver answered',
    params: exportParams,
    query: { schema: ListBillingExportRunsQuery },
    success: { status: 200, description: 'One page of runs', schema: ListBillingExportRunsResponse },
    errors: NOT_FOUND,
    async handle({ params, query, res, ctx }) {
      const id = params.billingExportId;
      const after = positionAfter(query.cursor, RUN_SEQUENCE);
      if (!(await ctx.billingExports.get(id))) throw new AppError('billing_export_not_found');
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const rows = await ctx.billingRuns.runs(
        id,
        after === undefined ? undefined : Number(after.id),
        limit + 1,
      );
      const { items, nextCursor } = pageOf(rows, limit, (r) => ({
        at: r.startedAt.getTime(),
        id: String(r.seq),
      }));
      const body: ListBillingExportRunsResponse = {
        runs: items.map(runView),
        ...(nextCursor !== undefined && { nextCursor }),
      };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'runBillingExport',
    method: 'post',
    path: RUNS_PATH,
    scope: 'billing:write',
    tag: TAG,
    summary: 'Run an export now: send every closed bucket not yet sent, and retry what waits',
    description:
      'As the schedule would, without waiting for the backoff of a failing receiver. Answers once the run is over: its sends stop at the first sign of a failing receiver (one request deadline at most).',
    params: exportParams,
    success: { status: 201, description: 'The run', schema: BillingExportRun },
    errors: {
      ...NOT_FOUND,
      billing_export_busy: 'Another replica is running the export; retry after `Retry-After` seconds',
    },
    async handle({ params, res, ctx }) {
      const id = params.billingExportId;
      if (!(await ctx.billingExports.get(id))) throw new AppError('billing_export_not_found');
      const outcome = await ctx.billing.runNow(id);
      if ('busy' in outcome) throw new AppError('billing_export_busy');
      if ('notFound' in outcome) throw new AppError('billing_export_not_found');
      const { run } = outcome;
      await ctx.audited(res, async () => ({
        result: undefined,
        action: 'billing_export.run',
        target: { type: 'billing_export', id },
        before: null,
        after: { runId: run.id, planned: run.planned, delivered: run.delivered, failed: run.failed },
      }));
      res.status(201).json(runView(run));
    },
  }),
];
