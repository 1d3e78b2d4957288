/** Usage over time: one key's, and the fleet's with its busiest keys (contract section 8). */
import type { Request, Response, Router } from 'express';
import { AppError } from '../errors.js';
import { bucketAt, bucketCount, type Granularity } from '../usage/granularity.js';
import type { BucketView } from '../usage/history.js';
import { retainedSince } from '../usage/retention.js';
import { requires } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { canBeKeyId, methodNotAllowed } from './route-helpers.js';
import { PATHS, REQUIRED_SCOPES } from './routes.js';
import type { FleetUsageResponse, KeyUsageResponse } from './schemas.js';
import { isoTimestamp } from './time-format.js';
import { parseTimestamp, validateFleetUsageQuery, validateKeyUsageQuery } from './validation.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** More buckets than this in one answer: 400 range_too_large. */
const MAX_BUCKETS = 1_500;

interface Range {
  readonly granularity: Granularity;
  /** Start of the first bucket and end of the last: the range widened to bucket boundaries. */
  readonly fromMs: number;
  readonly toMs: number;
}

/**
 * The range a query names: `to` defaults to now and `from` to 24 h before it; the granularity to
 * minutes up to 3 h, hours up to 4 days, days beyond; both ends widened to whole buckets.
 */
function rangeOf(query: { from?: string; to?: string; granularity?: Granularity }, ctx: ManagementContext): Range {
  const now = ctx.clock();
  const to = query.to === undefined ? now : parseTimestamp(query.to)!.getTime();
  const from = query.from === undefined ? to - DAY_MS : parseTimestamp(query.from)!.getTime();
  if (from >= to) throw new AppError('validation_failed', 'The request is not valid: from must be before to', [{ field: 'from', message: 'must be before to' }]);
  const granularity = query.granularity ?? (to - from <= 3 * HOUR_MS ? 'minute' : to - from <= 4 * DAY_MS ? 'hour' : 'day');
  const fromMs = bucketAt(granularity, from).start;
  const last = bucketAt(granularity, to - 1);
  if (bucketCount(granularity, fromMs, last.end) > MAX_BUCKETS) throw new AppError('range_too_large');
  if (fromMs < retainedSince(ctx.usageRetention, granularity, now)) {
    throw new AppError('range_beyond_retention', `The range reaches back beyond what is retained at ${granularity} granularity`);
  }
  return { granularity, fromMs, toMs: last.end };
}

const bucketJson = (b: BucketView) => ({ ...b, start: isoTimestamp(b.start) });

/** A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
const csvField = (value: string | number) => {
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

const CSV_COLUMNS = ['start', 'requests', 'successful', 'failed', 'rateLimited', 'averageResponseTimeMs'] as const;

/** The same answer as CSV, one row per bucket (per series and bucket with `groupBy`). */
function sendCsv(res: Response, rows: { name?: string; bucket: ReturnType<typeof bucketJson> }[], nameColumn?: string): void {
  const header = [...(nameColumn ? ['start', nameColumn] : ['start']), ...CSV_COLUMNS.slice(1)].join(',');
  const lines = rows.map(({ name, bucket }) =>
    [bucket.start, ...(nameColumn ? [name ?? ''] : []), ...CSV_COLUMNS.slice(1).map((c) => bucket[c])].map(csvField).join(','),
  );
  res.type('text/csv; charset=utf-8').send([header, ...lines].join('\r\n') + '\r\n');
}

const wantsCsv = (req: Request) => req.accepts(['application/json', 'text/csv']) === 'text/csv';

export function addUsageRoutes(router: Router, ctx: ManagementContext): void {
  router
    .route(PATHS.keyUsage)
    .get(requires(REQUIRED_SCOPES.keyUsage.get), async (req, res) => {
      const id = req.params.consumerApiKeyId;
      const query = validateKeyUsageQuery({ ...req.query });
      const range = rangeOf(query, ctx);
      const { granularity, fromMs, toMs } = range;
      if (query.groupBy !== undefined && granularity !== 'day' && granularity !== 'month') {
        throw new AppError('validation_failed', 'The request is not valid: groupBy needs day or month granularity', [
          { field: 'groupBy', message: 'needs granularity day or month' },
        ]);
      }
      if (!canBeKeyId(id) || !(await ctx.keys.get(id))) throw new AppError('key_not_found');
      const buckets = (await ctx.history.forKey(id, granularity, fromMs, toMs)).map(bucketJson);
      const series =
        query.groupBy === undefined || (granularity !== 'day' && granularity !== 'month')
          ? undefined
          : await ctx.history.seriesForKey(id, query.groupBy, granularity, fromMs, toMs, ctx.clock());
      const nameField = query.groupBy === 'customer' ? 'customerId' : 'endpoint';
      if (wantsCsv(req)) {
        if (series) sendCsv(res, series.flatMap((s) => s.buckets.map((b) => ({ name: s.name, bucket: bucketJson(b) }))), nameField);
        else sendCsv(res, buckets.map((bucket) => ({ bucket })));
        return;
      }
      const body: KeyUsageResponse = {
        consumerApiKeyId: id,
        granularity,
        from: isoTimestamp(fromMs),
        to: isoTimestamp(toMs),
        buckets,
        ...(series && { series: series.map((s) => ({ [nameField]: s.name, buckets: s.buckets.map(bucketJson) })) }),
      };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD'));

  router
    .route(PATHS.fleetUsage)
    .get(requires(REQUIRED_SCOPES.fleetUsage.get), async (req, res) => {
      const { granularity, fromMs, toMs } = rangeOf(validateFleetUsageQuery({ ...req.query }), ctx);
      const fleet = await ctx.history.forFleet(granularity, fromMs, toMs);
      const buckets = fleet.buckets.map(bucketJson);
      if (wantsCsv(req)) {
        sendCsv(res, buckets.map((bucket) => ({ bucket })));
        return;
      }
      const body: FleetUsageResponse = {
        granularity,
        from: isoTimestamp(fromMs),
        to: isoTimestamp(toMs),
        buckets,
        topKeys: fleet.topKeys.map((k) => ({ consumerApiKeyId: k.keyId, name: k.name, requests: k.requests, rateLimited: k.rateLimited })),
      };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD'));
}
