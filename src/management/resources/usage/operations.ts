/** Usage over time: one key's, and the fleet's with its busiest keys (docs/guides/usage-and-billing.md). */
import { Type, type Static } from '@sinclair/typebox';
import type { Request, Response } from 'express';
import { AppError } from '../../../errors.js';
import { bucketAt, bucketCount, type Granularity } from '../../../usage/granularity.js';
import type { BucketView, SeriesView } from '../../../usage/history.js';
import type { HistoryScope, SeriesBy, TopConsumer } from '../../../usage/history-repository.js';
import { NO_ROUTE_ID, OUTCOMES } from '../../../usage/usage.js';
import { retainedSince } from '../../../usage/retention.js';
import type { ManagementContext } from '../../context.js';
import { csvField, wantsCsv } from '../../csv.js';
import { defineOperation } from '../../operation.js';
import { ConsumerId, KeyId } from '../../schemas.js';
import {
  ConsumerUsageResponse,
  FleetUsageQuery,
  FleetUsageResponse,
  KeyUsageQuery,
  OneKeyUsageQuery,
  KeyUsageResponse,
} from './schemas.js';
import { isoTimestamp } from '../../time-format.js';
import { parseTimestamp, rangeProblems } from '../../validation.js';

const TAG = 'Usage';
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
/** The last instant the API's timestamps can write (`YYYY` has four digits). */
const LAST_WRITABLE_MS = Date.UTC(9999, 11, 31, 23, 59, 59);

const RANGE_ERRORS = {
  range_beyond_retention: 'The range reaches back beyond retention at that granularity',
  range_too_large:
    'More than 1,500 buckets (with `groupBy`: more than 320,000 series buckets, series × buckets)',
} as const;

interface Range {
  readonly granularity: Granularity;
  /** Start of the first bucket and end of the last: the range widened to bucket boundaries. */
  readonly fromMs: number;
  readonly toMs: number;
}

const invalidField = (field: string, message: string) =>
  new AppError('validation_failed', `The request is not valid: ${field} ${message}`, [{ field, message }]);

/**
 * The range a query names: `to` defaults to now and `from` to 24 h before it; the granularity to
 * minutes up to 3 h, hours up to 4 days, days beyond; both ends widened to whole buckets.
 */
function rangeOf(
  query: { from?: string; to?: string; granularity?: Granularity },
  ctx: ManagementContext,
): Range {
  const now = ctx.clock();
  const to = query.to === undefined ? now : parseTimestamp(query.to)!.getTime();
  const from = query.from === undefined ? to - DAY_MS : parseTimestamp(query.from)!.getTime();
  if (from >= to) throw invalidField('from', 'must be before to');
  const granularity =
    query.granularity ?? (to - from <= 3 * HOUR_MS ? 'minute' : to - from <= 4 * DAY_MS ? 'hour' : 'day');
  const fromMs = bucketAt(granularity, from).start;
  const last = bucketAt(granularity, to - 1);
  if (last.end > LAST_WRITABLE_MS)
    throw invalidField('to', `must leave its last ${granularity} ending by 9999-12-31T23:59:59Z`);
  if (bucketCount(granularity, fromMs, last.end) > MAX_BUCKETS) throw new AppError('range_too_large');
  if (fromMs < retainedSince(ctx.usageRetention, granularity, now)) {
    throw new AppError(
      'range_beyond_retention',
      `The range reaches back beyond what is retained at ${granularity} granularity`,
    );
  }
  return { granularity, fromMs, toMs: last.end };
}

const bucketJson = (b: BucketView) => ({ ...b, start: isoTimestamp(b.start) });
type BucketJson = ReturnType<typeof bucketJson>;

/** Each `groupBy`'s field naming a series, and a stored name as that field shows it. */
const SERIES_NAMES = {
  endpoint: ['endpoint', (name: string) => name],
  customer: ['customerId', (name: string) => name],
  // The catch-all (and no route) is stored under an empty id: null, as the OpenAPI document names it.
  route: ['routeId', (name: string) => (name === NO_ROUTE_ID ? null : name)],
} as const satisfies Record<SeriesBy, readonly [string, (name: string) => string | null]>;

/** The CSV columns after the start (and the name) and each one's value: a bucket's fields, flat (docs/guides/usage-and-billing.md). */
const CSV_COLUMNS: readonly (readonly [string, (b: BucketJson) => number | null])[] = [
  ['requests', (b) => b.requests],
  ['successful', (b) => b.successful],
  ['failed', (b) => b.failed],
  ['rateLimited', (b) => b.rateLimited],
  ['averageResponseTimeMs', (b) => b.averageResponseTimeMs],
  ['cost', (b) => b.cost],
  ['status2xx', (b) => b.statusClasses['2xx']],
  ['status3xx', (b) => b.statusClasses['3xx']],
  ['status4xx', (b) => b.statusClasses['4xx']],
  ['status5xx', (b) => b.statusClasses['5xx']],
  ...OUTCOMES.filter((o) => o !== 'rateLimited').map((o) => [o, (b: BucketJson) => b.outcomes[o]] as const),
  ['latencyP50Ms', (b) => b.latencyMs.p50],
  ['latencyP95Ms', (b) => b.latencyMs.p95],
  ['latencyP99Ms', (b) => b.latencyMs.p99],
];

/** The same answer as CSV, one row per bucket (per series and bucket with `groupBy`); a null percentile or route id is an empty field. */
function sendCsv(res: Response, rows: { name?: string; bucket: BucketJson }[], nameColumn?: string): void {
  const header = [
    ...(nameColumn ? ['start', nameColumn] : ['start']),
    ...CSV_COLUMNS.map(([name]) => name),
  ].join(',');
  const lines = rows.map(({ name, bucket }) =>
    [
      csvField(bucket.start),
      ...(nameColumn ? [csvField(name ?? '', true)] : []),
      ...CSV_COLUMNS.map(([, value]) => csvField(value(bucket) ?? '')),
    ].join(','),
  );
  res.type('text/csv; charset=utf-8').send([header, ...lines].join('\r\n') + '\r\n');
}

type Subject =
  | { readonly keyId: string; readonly consumerId?: string }
  | { readonly consumerId: string; readonly keyIds: readonly string[] };

/**
 * Refuses (400 `range_too_large`) a grouped answer of more than MAX_SERIES_BUCKETS series buckets,
 * counted from what is stored before anything is read (decision record 0020).
 */
async function checkSeriesBound(
  ctx: ManagementContext,
  scope: HistoryScope,
  by: SeriesBy,
  granularity: 'day' | 'month',
  fromMs: number,
  toMs: number,
): Promise<void> {
  const count = await ctx.history.seriesCount(scope, by, granularity, fromMs, toMs);
  const width = bucketCount(granularity, fromMs, toMs);
  if (count * width > MAX_SERIES_BUCKETS) {
    throw new AppError(
      'range_too_large',
      `The answer would hold ${count} series of ${width} buckets, more than ${MAX_SERIES_BUCKETS.toLocaleString('en-US')} series buckets: narrow the range or use month granularity`,
    );
  }
}

/** `groupBy` needs day or month granularity (400 `validation_failed` otherwise). */
function seriesGranularity(
  groupBy: SeriesBy | undefined,
  granularity: Granularity,
): 'day' | 'month' | undefined {
  if (groupBy === undefined) return undefined;
  if (granularity !== 'day' && granularity !== 'month')
    throw invalidField('groupBy', 'needs granularity day or month');
  return granularity;
}

/** Series as JSON: each named by `groupBy`'s field. */
const seriesJson = (by: SeriesBy, series: readonly SeriesView[]) => {
  const [field, shown] = SERIES_NAMES[by];
  return series.map((s) => ({ [field]: shown(s.name), buckets: s.buckets.map(bucketJson) }));
};

/** Buckets, or series with `groupBy`, as CSV: a series' name in `groupBy`'s column. */
function sendSeriesCsv(
  res: Response,
  buckets: readonly BucketJson[],
  by: SeriesBy | undefined,
  series: readonly SeriesView[] | undefined,
): void {
  if (by === undefined || series === undefined)
    return sendCsv(
      res,
      buckets.map((bucket) => ({ bucket })),
    );
  const [field, shown] = SERIES_NAMES[by];
  sendCsv(
    res,
    series.flatMap((s) => s.buckets.map((b) => ({ name: shown(s.name) ?? '', bucket: bucketJson(b) }))),
    field,
  );
}

/**
 * A key's or a consumer's buckets over the query's range, with its series when `groupBy` asks; sent
 * as CSV to a caller that prefers it (then undefined), else returned for the JSON answer.
 */
async function usageOverTime(
  subject: Subject,
  query: Static<typeof KeyUsageQuery>,
  req: Request,
  res: Response,
  ctx: ManagementContext,
) {
  const { granularity, fromMs, toMs } = rangeOf(query, ctx);
  const by = query.groupBy;
  const seriesBy = seriesGranularity(by, granularity);
  const { history } = ctx;
  const range =
    'keyId' in subject
      ? await history.forKey(subject.keyId, granularity, fromMs, toMs, subject.consumerId)
      : await history.forConsumer(subject.consumerId, subject.keyIds, granularity, fromMs, toMs);
  const buckets = range.buckets.map(bucketJson);
  let series: SeriesView[] | undefined;
  if (by !== undefined && seriesBy !== undefined) {
    const scope = 'keyId' in subject ? subject : { consumerId: subject.consumerId };
    await checkSeriesBound(ctx, scope, by, seriesBy, fromMs, toMs);
    const now = ctx.clock();
    series =
      'keyId' in subject
        ? await history.seriesForKey(subject.keyId, by, seriesBy, fromMs, toMs, now, subject.consumerId)
        : await history.seriesForConsumer(
            subject.consumerId,
            subject.keyIds,
            by,
            seriesBy,
            fromMs,
            toMs,
            now,
          );
  }
  if (wantsCsv(req)) {
    sendSeriesCsv(res, buckets, by, series);
    return undefined;
  }
  return {
    granularity,
    from: isoTimestamp(fromMs),
    to: isoTimestamp(toMs),
    buckets,
    latencyMs: range.latencyMs,
    ...(by && series && { series: seriesJson(by, series) }),
  };
}

/** The busiest consumers with their names (one consumer deleted since shows its id). */
async function namedConsumers(
  top: readonly TopConsumer[],
  ctx: ManagementContext,
): Promise<FleetUsageResponse['topConsumers']> {
  const consumers = await Promise.all(top.map((c) => ctx.consumers.get(c.consumerId)));
  return top.map((c, i) => ({
    consumerId: c.consumerId,
    name: consumers[i]?.name ?? c.consumerId,
    requests: c.requests,
    rateLimited: c.rateLimited,
  }));
}

const CSV_DESCRIPTION = `\`Accept: text/csv\` (any parameters, such as \`charset\`) answers the same as CSV (columns start, [endpoint|customerId|routeId,] ${CSV_COLUMNS.map(([name]) => name).join(', ')}; an empty latency field: no requests; an empty routeId: the catch-all); an endpoint, customer id or route id is always quoted, and one starting with = + - @, a tab or a carriage return is prefixed with ' so that a spreadsheet does not run it as a formula.`;
/** What `groupBy=route` answers, for every scope. */
const ROUTE_SERIES_DESCRIPTION =
  '`groupBy=route` adds one series per route the requests took (`routeId`; null: the catch-all, UPSTREAM_URL, or no route at all); a route deleted since keeps its series under its id (a route created again with that id continues it), and usage counted before the route series existed (or by a replica of an earlier version) is in no route series. Each day and month holds at most 1,000 routes of a key, the rest under "(other)".';

export const usageOperations = [
  defineOperation({
    id: 'getConsumerApiKeyUsage',
    method: 'get',
    path: '/consumer-api-key/:consumerApiKeyId/usage',
    scope: 'usage:read',
    tag: TAG,
    summary: "A key's usage over time",
    description: `Zero-filled buckets aligned to UTC, oldest first; a request shows within 2 s. \`groupBy\` (day and month only) adds one series per endpoint, customer or route, filed under the day each request happened; each day and month holds at most 1,000 endpoints and 10,000 customers of a key, the rest under "(other)". ${ROUTE_SERIES_DESCRIPTION} ${CSV_DESCRIPTION} Retention: minutes 48 h, hours 90 days, days 400 days, months 5 years (USAGE_RETENTION_*).`,
    params: {
      schema: Type.Object({
        consumerApiKeyId: { ...KeyId, description: 'The key id (`id` of the create response)' },
      }),
      notFound: 'key_not_found',
    },
    query: { schema: OneKeyUsageQuery, check: rangeProblems },
    success: { status: 200, description: 'The buckets', schema: KeyUsageResponse, csv: true },
    errors: { ...RANGE_ERRORS, key_not_found: 'No key has that id' },
    async handle({ params: { consumerApiKeyId: id }, query: { consumerId, ...query }, req, res, ctx }) {
      // A well-formed query for a key that does not exist is a 404, whatever its range.
      if (!(await ctx.keys.get(id))) throw new AppError('key_not_found');
      const subject = consumerId === undefined ? { keyId: id } : { keyId: id, consumerId };
      const answer = await usageOverTime(subject, query, req, res, ctx);
      if (answer) res.json({ consumerApiKeyId: id, ...answer } satisfies KeyUsageResponse);
    },
  }),

  defineOperation({
    id: 'getConsumerUsage',
    method: 'get',
    path: '/tollgate/consumers/:consumerId/usage',
    scope: 'usage:read',
    tag: TAG,
    summary: "A consumer's usage over time: what its keys did while they belonged to it",
    description: `As a key's usage over time, summed over every key while it belonged to the consumer (moving a key moves none of its history). ${ROUTE_SERIES_DESCRIPTION} ${CSV_DESCRIPTION}`,
    params: {
      schema: Type.Object({ consumerId: { ...ConsumerId, description: 'The consumer id' } }),
      notFound: 'consumer_not_found',
    },
    query: { schema: KeyUsageQuery, check: rangeProblems },
    success: { status: 200, description: 'The buckets', schema: ConsumerUsageResponse, csv: true },
    errors: { ...RANGE_ERRORS, consumer_not_found: 'No consumer has that id' },
    async handle({ params: { consumerId }, query, req, res, ctx }) {
      if (!(await ctx.consumers.get(consumerId))) throw new AppError('consumer_not_found');
      const answer = await usageOverTime(
        { consumerId, keyIds: await ctx.keys.idsOfConsumer(consumerId) },
        query,
        req,
        res,
        ctx,
      );
      if (answer) res.json({ consumerId, ...answer } satisfies ConsumerUsageResponse);
    },
  }),

  defineOperation({
    id: 'getFleetUsage',
    method: 'get',
    path: '/tollgate/usage',
    scope: 'usage:read',
    tag: TAG,
    summary: "Every key's usage over time, and the busiest keys and consumers",
    description: `The buckets summed over all keys (from stored usage: about a second behind), \`topKeys\`: at most 10 keys with the most requests in the range, and \`topConsumers\`: at most 10 consumers. ${ROUTE_SERIES_DESCRIPTION} The fleet's series sum every key's. ${CSV_DESCRIPTION}`,
    query: { schema: FleetUsageQuery, check: rangeProblems },
    success: {
      status: 200,
      description: 'The buckets and the busiest keys',
      schema: FleetUsageResponse,
      csv: true,
    },
    errors: RANGE_ERRORS,
    async handle({ query, req, res, ctx }) {
      const { granularity, fromMs, toMs } = rangeOf(query, ctx);
      const by = query.groupBy;
      const seriesBy = seriesGranularity(by, granularity);
      const fleet = await ctx.history.forFleet(granularity, fromMs, toMs);
      const buckets = fleet.buckets.map(bucketJson);
      let series: SeriesView[] | undefined;
      if (by !== undefined && seriesBy !== undefined) {
        await checkSeriesBound(ctx, 'fleet', by, seriesBy, fromMs, toMs);
        series = await ctx.history.seriesForFleet(by, seriesBy, fromMs, toMs);
      }
      if (wantsCsv(req)) {
        sendSeriesCsv(res, buckets, by, series);
        return;
      }
      const body: FleetUsageResponse = {
        granularity,
        from: isoTimestamp(fromMs),
        to: isoTimestamp(toMs),
        buckets,
        latencyMs: fleet.latencyMs,
        topKeys: fleet.topKeys.map((k) => ({
          consumerApiKeyId: k.keyId,
          name: k.name,
          requests: k.requests,
          rateLimited: k.rateLimited,
        })),
        topConsumers: await namedConsumers(await ctx.history.topConsumers(granularity, fromMs, toMs), ctx),
        ...(by && series && { series: seriesJson(by, series) as FleetUsageResponse['series'] }),
      };
      res.json(body);
    },
  }),
];
