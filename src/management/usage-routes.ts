/** Usage over time: one key's, and the fleet's with its busiest keys (contract section 8). */
import type { Request, Response, Router } from 'express';
import { AppError } from '../errors.js';
import { bucketAt, bucketCount, type Granularity } from '../usage/granularity.js';
import type { BucketView, SeriesView } from '../usage/history.js';
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
/**
 * More series buckets than this in one answer (series × buckets): 400 range_too_large. A month of
 * days for a day's whole customer cap (10,000 and "(other)") fits; beyond it the answer would reach
 * tens of megabytes, and a year of days of a busy key gigabytes (decision record 0020).
 */
const MAX_SERIES_BUCKETS = 320_000;

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

/**
 * A CSV field (RFC 4180). Paths and customer ids come from clients and the CSV goes into
 * spreadsheets, so (OWASP, CSV injection) a name is always quoted, and one that a spreadsheet would
 * read as a formula (starting with =, +, -, @, a tab or a carriage return) starts with a `'`.
 */
function csvField(value: string | number, name = false): string {
  let text = String(value);
  if (name && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return name || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const CSV_COLUMNS = ['start', 'requests', 'successful', 'failed', 'rateLimited', 'averageResponseTimeMs'] as const;

/** The same answer as CSV, one row per bucket (per series and bucket with `groupBy`). */
function sendCsv(res: Response, rows: { name?: string; bucket: ReturnType<typeof bucketJson> }[], nameColumn?: string): void {
  const header = [...(nameColumn ? ['start', nameColumn] : ['start']), ...CSV_COLUMNS.slice(1)].join(',');
  const lines = rows.map(({ name, bucket }) =>
    [csvField(bucket.start), ...(nameColumn ? [csvField(name ?? '', true)] : []), ...CSV_COLUMNS.slice(1).map((c) => csvField(bucket[c]))].join(','),
  );
  res.type('text/csv; charset=utf-8').send([header, ...lines].join('\r\n') + '\r\n');
}

const wantsCsv = (req: Request) => req.accepts(['application/json', 'text/csv']) === 'text/csv';

/**
 * The query with `from` and `to` cut to whole seconds: JavaScript's toISOString() writes
 * milliseconds, and buckets are whole minutes or more, so a fraction changes nothing.
 */
function wholeSeconds(query: Request['query']): Record<string, unknown> {
  const cut = (value: unknown) => (typeof value === 'string' ? value.replace(/\.[0-9]{1,9}Z$/, 'Z') : value);
  return { ...query, ...('from' in query && { from: cut(query.from) }), ...('to' in query && { to: cut(query.to) }) };
}

export function addUsageRoutes(router: Router, ctx: ManagementContext): void {
  router
    .route(PATHS.keyUsage)
    .get(requires(REQUIRED_SCOPES.keyUsage.get), async (req, res) => {
      const id = req.params.consumerApiKeyId;
      const query = validateKeyUsageQuery(wholeSeconds(req.query));
      // A well-formed query for a key that does not exist is a 404, whatever its range.
      if (!canBeKeyId(id) || !(await ctx.keys.get(id))) throw new AppError('key_not_found');
      const { granularity, fromMs, toMs } = rangeOf(query, ctx);
      if (query.groupBy !== undefined && granularity !== 'day' && granularity !== 'month') {
        throw new AppError('validation_failed', 'The request is not valid: groupBy needs day or month granularity', [
          { field: 'groupBy', message: 'needs granularity day or month' },
        ]);
      }
      const buckets = (await ctx.history.forKey(id, granularity, fromMs, toMs)).map(bucketJson);
      let series: SeriesView[] | undefined;
      if (query.groupBy !== undefined && (granularity === 'day' || granularity === 'month')) {
        const count = await ctx.history.seriesCount(id, query.groupBy, granularity, fromMs, toMs);
        const width = bucketCount(granularity, fromMs, toMs);
        if (count * width > MAX_SERIES_BUCKETS) {
          throw new AppError(
            'range_too_large',
            `The answer would hold ${count} series of ${width} buckets, more than ${MAX_SERIES_BUCKETS.toLocaleString('en-US')} series buckets: narrow the range or use month granularity`,
          );
        }
        series = await ctx.history.seriesForKey(id, query.groupBy, granularity, fromMs, toMs, ctx.clock());
      }
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
      const { granularity, fromMs, toMs } = rangeOf(validateFleetUsageQuery(wholeSeconds(req.query)), ctx);
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
