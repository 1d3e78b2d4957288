/** The failure log: which requests of a key, a consumer or the fleet failed, when and why (docs/guides/failures.md). */
import { Type } from '@sinclair/typebox';
import type { Request, Response } from 'express';
import { AppError } from '../../../errors.js';
import type { FailureScope, StoredFailure } from '../../../usage/failure-log-repository.js';
import type { ManagementContext } from '../../context.js';
import { csvField, wantsCsv } from '../../csv.js';
import { defineOperation } from '../../operation.js';
import { pageOf, positionAfter } from '../../pages.js';
import { ConsumerId, DEFAULT_PAGE_SIZE, KeyId } from '../../schemas.js';
import { parseTimestamp, rangeProblems } from '../../validation.js';
import { FailuresQuery, FailuresResponse, KeyFailuresQuery, type Failure } from './schemas.js';

const TAG = 'Usage';
/** The position in the log is its sequence number. */
const SEQUENCE = /^[0-9]{1,16}$/;
const DESCRIPTION =
  "Every request that counts as failed in the key's usage (a refusal of a valid key, a backend's 4xx or 5xx, a backend unreachable or too slow, a client that left first), verify calls included, newest first; it shows within about 2 s (with replicas, on every replica within 5 s). At most 100 failures per key per minute are kept; the rest are counted in `leftOut`. Entries are kept FAILURE_LOG_RETENTION_DAYS (default 7). An entry holds no secret, header value or query string. `Accept: text/csv` answers the page as CSV (columns time, requestId, consumerApiKeyId, consumerId, method, path, routeId, status, code, limitName, limitPeriod, limitScope, limit, clientAddress, customerId, durationMs; texts quoted, and one starting with = + - @, a tab or a carriage return prefixed with ') with the next cursor in the `X-Next-Cursor` header and `leftOut` in `X-Left-Out`.";

/** A stored failure as the API shows it. */
function failureView(f: StoredFailure): Failure {
  return {
    time: new Date(f.atMs).toISOString(),
    requestId: f.requestId,
    consumerApiKeyId: f.keyId,
    consumerId: f.consumerId,
    method: f.method,
    path: f.path,
    routeId: f.routeId,
    status: f.status,
    code: f.code,
    limit: f.limit,
    clientAddress: f.clientAddress,
    customerId: f.customerId,
    durationMs: f.durationMs,
  };
}

/** The CSV columns and each one's field of a failure; null is an empty field. */
const CSV_COLUMNS: readonly (readonly [string, (f: Failure) => string | number | null, boolean?])[] = [
  ['time', (f) => f.time],
  ['requestId', (f) => f.requestId, true],
  ['consumerApiKeyId', (f) => f.consumerApiKeyId],
  ['consumerId', (f) => f.consumerId],
  ['method', (f) => f.method, true],
  ['path', (f) => f.path, true],
  ['routeId', (f) => f.routeId, true],
  ['status', (f) => f.status],
  ['code', (f) => f.code],
  ['limitName', (f) => f.limit?.name ?? null, true],
  ['limitPeriod', (f) => f.limit?.period ?? null],
  ['limitScope', (f) => f.limit?.scope ?? null],
  ['limit', (f) => f.limit?.limit ?? null],
  ['clientAddress', (f) => f.clientAddress, true],
  ['customerId', (f) => f.customerId, true],
  ['durationMs', (f) => f.durationMs],
];

/**
 * One page of a scope's failures, as JSON or (when the caller prefers it) CSV; `exists` (when given)
 * refuses a scope that is not there, after the query's own problems (a cursor of no page: 400).
 */
async function sendFailures(
  scope: FailureScope,
  exists: (() => Promise<void>) | undefined,
  query: FailuresQuery,
  req: Request,
  res: Response,
  ctx: ManagementContext,
): Promise<void> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const range = {
    scope,
    // rangeProblems has refused a timestamp that is no date.
    fromMs: query.from === undefined ? 0 : parseTimestamp(query.from)!.getTime(),
    toMs: query.to === undefined ? Number.MAX_SAFE_INTEGER : parseTimestamp(query.to)!.getTime(),
    ...(query.code !== undefined && { code: query.code }),
  };
  const after = positionAfter(query.cursor, SEQUENCE);
  await exists?.();
  const [rows, leftOut] = await Promise.all([
    ctx.failureLog.list({
      ...range,
      ...(query.requestId !== undefined && { requestId: query.requestId }),
      ...(after !== undefined && { after }),
      limit: limit + 1,
    }),
    ctx.failureLog.leftOut(range),
  ]);
  const { items, nextCursor } = pageOf(rows, limit, (f) => ({ at: f.atMs, id: f.seq }));
  const failures = items.map(failureView);
  if (!wantsCsv(req)) {
    res.json({
      failures,
      ...(nextCursor !== undefined && { nextCursor }),
      leftOut,
    } satisfies FailuresResponse);
    return;
  }
  if (nextCursor !== undefined) res.set('x-next-cursor', nextCursor);
  res.set('x-left-out', String(leftOut));
  const lines = failures.map((f) =>
    CSV_COLUMNS.map(([, value, text]) => csvField(value(f) ?? '', text)).join(','),
  );
  res
    .type('text/csv; charset=utf-8')
    .send([CSV_COLUMNS.map(([name]) => name).join(','), ...lines].join('\r\n') + '\r\n');
}

export const failureOperations = [
  defineOperation({
    id: 'listConsumerApiKeyFailures',
    method: 'get',
    path: '/consumer-api-key/:consumerApiKeyId/failures',
    scope: 'usage:read',
    tag: TAG,
    summary: "A key's failed requests: which, when and why",
    description: DESCRIPTION,
    params: {
      schema: Type.Object({
        consumerApiKeyId: { ...KeyId, description: 'The key id (`id` of the create response)' },
      }),
      notFound: 'key_not_found',
    },
    query: { schema: KeyFailuresQuery, check: rangeProblems },
    success: { status: 200, description: 'One page of failures', schema: FailuresResponse, csv: true },
    errors: { key_not_found: 'No key has that id' },
    async handle({ params: { consumerApiKeyId: keyId }, query: { consumerId, ...query }, req, res, ctx }) {
      const exists = async () => {
        if (!(await ctx.keys.get(keyId))) throw new AppError('key_not_found');
      };
      const scope = consumerId === undefined ? { keyId } : { keyId, consumerId };
      await sendFailures(scope, exists, query, req, res, ctx);
    },
  }),

  defineOperation({
    id: 'listConsumerFailures',
    method: 'get',
    path: '/tollgate/consumers/:consumerId/failures',
    scope: 'usage:read',
    tag: TAG,
    summary: "A consumer's failed requests: those of its keys while they belonged to it",
    description: DESCRIPTION,
    params: {
      schema: Type.Object({ consumerId: { ...ConsumerId, description: 'The consumer id' } }),
      notFound: 'consumer_not_found',
    },
    query: { schema: FailuresQuery, check: rangeProblems },
    success: { status: 200, description: 'One page of failures', schema: FailuresResponse, csv: true },
    errors: { consumer_not_found: 'No consumer has that id' },
    async handle({ params: { consumerId }, query, req, res, ctx }) {
      const exists = async () => {
        if (!(await ctx.consumers.get(consumerId))) throw new AppError('consumer_not_found');
      };
      await sendFailures({ consumerId }, exists, query, req, res, ctx);
    },
  }),

  defineOperation({
    id: 'listFleetFailures',
    method: 'get',
    path: '/tollgate/failures',
    scope: 'usage:read',
    tag: TAG,
    summary: "Every key's failed requests; `requestId` finds one",
    description: DESCRIPTION,
    query: { schema: FailuresQuery, check: rangeProblems },
    success: { status: 200, description: 'One page of failures', schema: FailuresResponse, csv: true },
    async handle({ query, req, res, ctx }) {
      await sendFailures({}, undefined, query, req, res, ctx);
    },
  }),
];
