/** Usage: the totals of a key or consumer detail, and usage over time (per key, consumer and fleet). */
import { type Static, Type } from '@sinclair/typebox';
import { RateLimitState } from '../plans/schemas.js';
import { ConsumerId, Count, IsoTimestamp, KeyId, strict } from '../../schemas.js';
import { GRANULARITIES, type Granularity } from '../../../usage/granularity.js';

const EndpointUsage = Type.Object(
  {
    endpoint: Type.String({
      description:
        'Request path without the query string, cut at 512 characters at a whole character (never inside a percent-escape); "(other)" beyond 1000 distinct paths',
    }),
    requests: Count,
    successful: Count,
    failed: Count,
    averageResponseTimeMs: Type.Number({
      minimum: 0,
      description: 'Mean time from request received to response finished',
    }),
    cost: { ...Count, description: 'Units charged' },
    unsettled: { ...Count, description: 'Requests that settled nothing readable, charged their reservation' },
  },
  strict,
);

const CustomerUsage = Type.Object(
  {
    customerId: Type.String({
      description:
        'The CUSTOMER_ID_HEADER value read as UTF-8 (a byte sequence that is not UTF-8 as U+FFFD), cut at 200 Unicode code points; one holding a control character is refused (400 `invalid_customer_id`) and never listed',
    }),
    requests: Count,
    successful: Count,
    failed: Count,
  },
  strict,
);

const usageTotalsFields = {
  totalRequests: Type.Integer({ minimum: 0, description: 'Proxied requests that presented this key' }),
  successfulRequests: Type.Integer({
    minimum: 0,
    description: 'Forwarded and answered by the backend with a status below 400',
  }),
  failedRequests: Type.Integer({ minimum: 0, description: 'The rest: 429, 502, 504, backend 4xx and 5xx' }),
  cost: Type.Integer({
    minimum: 0,
    description:
      "Units charged: the cost of each admitted request (its plans' `costs`, else 1), 0 per refused one (usage counted before the upgrade that added it: 0)",
  }),
  unsettled: Type.Integer({
    minimum: 0,
    description:
      "Requests of a usage-priced plan (a cost entry's `settle`) whose response reported no units readable (no header, no such field, a malformed body, the client leaving, the backend failing or timing out): each charged its reservation, which `cost` counts (usage counted before the upgrade that added it: 0)",
  }),
  endpoints: Type.Array(EndpointUsage, { description: 'One entry per request path, most requests first' }),
  usageByCustomer: Type.Array(CustomerUsage, {
    description:
      'Grouped by the customer-id header (CUSTOMER_ID_HEADER); requests without it are not listed. At most 1,000 customers, most requests first (see usageByCustomerNotListed)',
  }),
  usageByCustomerNotListed: Type.Optional(
    Type.Object(
      { customers: Count, requests: Count, successful: Count, failed: Count },
      {
        ...strict,
        description:
          'Present when the key has more customers than usageByCustomer lists: how many more, and their usage summed. Every customer by day or month: GET /consumer-api-key/{id}/usage?groupBy=customer',
      },
    ),
  ),
};

/** What the usage reader returns: the OpenAPI document's usage object less `rateLimits`, which the limiter knows. */
export const UsageTotals = Type.Object(usageTotalsFields, { ...strict, title: 'UsageTotals' });
export type UsageTotals = Static<typeof UsageTotals>;

export const Usage = Type.Object(
  {
    totalRequests: usageTotalsFields.totalRequests,
    successfulRequests: usageTotalsFields.successfulRequests,
    failedRequests: usageTotalsFields.failedRequests,
    cost: usageTotalsFields.cost,
    unsettled: usageTotalsFields.unsettled,
    rateLimits: Type.Union([RateLimitState, Type.Null()], {
      description: "From the key's plan, else DEFAULT_RATE_LIMIT; null when neither applies",
    }),
    endpoints: usageTotalsFields.endpoints,
    usageByCustomer: usageTotalsFields.usageByCustomer,
    usageByCustomerNotListed: usageTotalsFields.usageByCustomerNotListed,
  },
  strict,
);

export const GranularitySchema = Type.Unsafe<Granularity>({
  type: 'string',
  enum: [...GRANULARITIES],
  description: 'Bucket size, aligned to UTC. Default: minute up to 3 h, hour up to 4 days, day beyond',
});

/** A range end: like every timestamp, but a fraction of a second (as toISOString() writes it) is accepted and cut off. */
const RangeTimestamp = Type.String({
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$',
  description: 'UTC: YYYY-MM-DDThh:mm:ssZ (a fraction of a second is cut off)',
});
const usageQueryFields = {
  from: Type.Optional({
    ...RangeTimestamp,
    description: 'Start of the range (default: 24 h before `to`); a fraction of a second is cut off',
  }),
  to: Type.Optional({
    ...RangeTimestamp,
    description:
      'End of the range, exclusive (default: now); its last bucket must end by 9999-12-31T23:59:59Z',
  }),
  granularity: Type.Optional(GranularitySchema),
};

export const KeyUsageQuery = Type.Object(
  {
    ...usageQueryFields,
    groupBy: Type.Optional(
      Type.Unsafe<'endpoint' | 'customer' | 'route'>({
        type: 'string',
        enum: ['endpoint', 'customer', 'route'],
        description: 'Adds one series per endpoint, customer or route (day and month granularity only)',
      }),
    ),
  },
  { ...strict, title: 'KeyUsageQuery' },
);

/** A key's usage or failures only while it belonged to one consumer: how the portal shows a key moved to its user. */
export const whileBelongingTo = {
  consumerId: Type.Optional({
    ...ConsumerId,
    description:
      'Only what the key did while it belonged to this consumer (a key moved since keeps its past with the consumer it had)',
  }),
};

export const OneKeyUsageQuery = Type.Object(
  { ...KeyUsageQuery.properties, ...whileBelongingTo },
  { ...strict, title: 'OneKeyUsageQuery' },
);

export const FleetUsageQuery = Type.Object(
  {
    ...usageQueryFields,
    groupBy: Type.Optional(
      Type.Unsafe<'route'>({
        type: 'string',
        enum: ['route'],
        description: 'Adds one series per route, summed over every key (day and month granularity only)',
      }),
    ),
  },
  { ...strict, title: 'FleetUsageQuery' },
);

const LatencyPercentile = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);

const UsageBucket = Type.Object(
  {
    start: IsoTimestamp,
    requests: Count,
    successful: { ...Count, description: 'Answered by the backend below 400' },
    failed: { ...Count, description: 'The rest: successful + failed = requests' },
    rateLimited: { ...Count, description: 'Refused by the limiter (429): part of failed' },
    averageResponseTimeMs: Type.Number({ minimum: 0 }),
    cost: { ...Count, description: 'Units charged: 0 for a refused request' },
    unsettled: {
      ...Count,
      description: 'Requests that settled nothing readable, charged their reservation (counted in cost)',
    },
    statusClasses: Type.Object(
      { '2xx': Count, '3xx': Count, '4xx': Count, '5xx': Count },
      {
        ...strict,
        description:
          "What the clients got, by class; they add up to requests (a WebSocket's 101 counts as 2xx, a client that left first as 4xx)",
      },
    ),
    outcomes: Type.Object(
      {
        rateLimited: { ...Count, description: 'Refused by the limiter (429)' },
        creditsExhausted: { ...Count, description: 'Refused for want of credits (429 credits_exhausted)' },
        concurrencyLimited: {
          ...Count,
          description:
            'Refused: as many requests of the key as its concurrency limit allows were in flight (429 concurrency_limit_exceeded)',
        },
        disabled: { ...Count, description: 'Refused: the key is disabled' },
        expired: { ...Count, description: 'Refused: the key has expired' },
        routeNotAllowed: { ...Count, description: 'Refused: the key may not use that route' },
        originNotAllowed: {
          ...Count,
          description:
            'Refused: the request came from an origin the key is not allowed from (403 origin_not_allowed)',
        },
        addressNotAllowed: {
          ...Count,
          description:
            "Refused: the client address is outside the key's allowedAddresses (403 address_not_allowed)",
        },
        backendError: { ...Count, description: 'The backend answered 5xx' },
        backendUnreachable: {
          ...Count,
          description: 'Tollgate answered 502 or 504: the backend could not be reached, or timed out',
        },
      },
      { ...strict, description: 'Why requests failed' },
    ),
    latencyMs: Type.Object(
      { p50: LatencyPercentile, p95: LatencyPercentile, p99: LatencyPercentile },
      {
        ...strict,
        description:
          'Response-time percentiles (request received to response finished) from a histogram, within 5 % of the exact value; null in an empty bucket',
      },
    ),
  },
  { ...strict, title: 'UsageBucket' },
);

const usageRangeFields = {
  granularity: GranularitySchema,
  from: { ...IsoTimestamp, description: 'Start of the first bucket' },
  to: { ...IsoTimestamp, description: 'End of the last bucket' },
  buckets: Type.Array(UsageBucket, { description: 'Every bucket of the range, oldest first, zero-filled' }),
  latencyMs: Type.Object(
    { p50: LatencyPercentile, p95: LatencyPercentile, p99: LatencyPercentile },
    {
      ...strict,
      description:
        "Response-time percentiles over the whole range: of all its requests, from the buckets' histograms added up (not the highest bucket's), within 5 % of the exact value; null when the range holds no request",
    },
  ),
};

/** A series names exactly one of its endpoint, its customer or its route, as `groupBy` asked. */
const EndpointSeries = Type.Object(
  { endpoint: Type.String(), buckets: Type.Array(UsageBucket) },
  { ...strict, description: 'groupBy=endpoint: one request path' },
);
const CustomerSeries = Type.Object(
  { customerId: Type.String(), buckets: Type.Array(UsageBucket) },
  { ...strict, description: 'groupBy=customer: one customer' },
);
const RouteSeries = Type.Object(
  {
    routeId: Type.Union([Type.String(), Type.Null()], {
      description:
        'The route the requests took, also after it was deleted; null: the catch-all (UPSTREAM_URL), or no route (404 route_not_found); "(other)": routes beyond the 1,000 a key holds per day and per month',
    }),
    buckets: Type.Array(UsageBucket),
  },
  { ...strict, description: 'groupBy=route: one route' },
);

export const KeyUsageResponse = Type.Object(
  {
    consumerApiKeyId: KeyId,
    ...usageRangeFields,
    series: Type.Optional(
      // The type stays the wider one the usage route builds (its name field is computed).
      Type.Array(
        Type.Unsafe<{
          endpoint?: string;
          customerId?: string;
          routeId?: string | null;
          buckets: Static<typeof UsageBucket>[];
        }>({
          oneOf: [EndpointSeries, CustomerSeries, RouteSeries],
        }),
        {
          description: 'With groupBy: one per endpoint (or customer, or route), most requests first',
        },
      ),
    ),
  },
  { ...strict, title: 'KeyUsageResponse' },
);

export const FleetUsageResponse = Type.Object(
  {
    ...usageRangeFields,
    topKeys: Type.Array(
      Type.Object(
        { consumerApiKeyId: KeyId, name: Type.String(), requests: Count, rateLimited: Count },
        strict,
      ),
      { maxItems: 10, description: 'The keys with the most requests in the range, most first' },
    ),
    topConsumers: Type.Array(
      Type.Object(
        { consumerId: Type.String(), name: Type.String(), requests: Count, rateLimited: Count },
        strict,
      ),
      {
        maxItems: 10,
        description: 'The consumers with the most requests filed under them in the range, most first',
      },
    ),
    series: Type.Optional(
      Type.Array(RouteSeries, { description: 'With groupBy=route: one per route, most requests first' }),
    ),
  },
  { ...strict, title: 'FleetUsageResponse' },
);

export const ConsumerUsageResponse = Type.Object(
  { consumerId: Type.String(), ...usageRangeFields, series: KeyUsageResponse.properties.series },
  { ...strict, title: 'ConsumerUsageResponse' },
);

export type KeyUsageResponse = Static<typeof KeyUsageResponse>;
export type ConsumerUsageResponse = Static<typeof ConsumerUsageResponse>;
export type FleetUsageResponse = Static<typeof FleetUsageResponse>;
