import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { Refusal, RefusalMetric } from '../refusals.js';

/**
 * How a proxied request ended; one label value each, never a per-key label (cardinality): forwarded,
 * the backend failed, or refused (each refusal's label is in src/refusals.ts).
 */
export type ProxyOutcome = 'forwarded' | 'upstream_error' | 'upstream_timeout' | RefusalMetric;

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/*
 * Instruments on the request path. prom-client hashes and validates the labels on every inc() and
 * observe(); with two counters and two histograms per proxied request that measured ~6 % of the
 * process's CPU (docs/performance.md). These record with plain additions and are read, in the same
 * exposition format, when the registry is collected (a scrape).
 */

/** A counter with one label: an increment adds 1 to a map entry, handed to prom-client when scraped. */
class RequestPathCounter<N extends string, V extends string> {
  private pending = new Map<V, number>();

  constructor(
    registry: Registry,
    name: string,
    help: string,
    private readonly labelName: N,
  ) {
    const handOver = (counter: Counter<N>): void => {
      for (const [value, n] of this.pending) counter.inc({ [labelName]: value } as Record<N, V>, n);
      this.pending = new Map();
    };
    // Registers itself; it is only reached through the registry's collect().
    new Counter<N>({
      name,
      help,
      labelNames: [labelName],
      registers: [registry],
      collect() {
        handOver(this);
      },
    });
  }

  inc(labels: Readonly<Record<N, V>>): void {
    const value = labels[this.labelName];
    this.pending.set(value, (this.pending.get(value) ?? 0) + 1);
  }
}

/** The `route` label of a request that went to UPSTREAM_URL, of one no route took (404), of routes beyond the bound. */
export const CATCH_ALL_ROUTE_LABEL = 'catch-all';
export const NO_ROUTE_LABEL = 'none';
export const OTHER_ROUTES_LABEL = 'other';
/** Route ids that may not be taken: they are label values of their own. */
export const RESERVED_ROUTE_LABELS: readonly string[] = [
  CATCH_ALL_ROUTE_LABEL,
  NO_ROUTE_LABEL,
  OTHER_ROUTES_LABEL,
];
/**
 * Route ids given a `route` label value of their own, per process: the first ones the replica loads
 * (the table is read oldest first). Routes are a managed set, so this is rarely reached; beyond it a
 * route counts as `other`, which bounds the series at (this + 3) × 5 status classes whatever the table.
 */
export const MAX_ROUTE_LABELS = 100;

/**
 * Proxied requests by route and status class (`2xx` … `5xx`; a client that left is `4xx`, as its
 * 499): a count per label kept in an array, handed to prom-client when scraped.
 */
class RouteRequestCounter {
  private readonly named = new Set<string>();
  private pending = new Map<string, number[]>();

  constructor(registry: Registry) {
    const handOver = (counter: Counter<'route' | 'status'>): void => {
      for (const [route, counts] of this.pending) {
        counts.forEach((n, i) => n > 0 && counter.inc({ route, status: `${i + 1}xx` }, n));
      }
      this.pending = new Map();
    };
    new Counter<'route' | 'status'>({
      name: 'tollgate_route_requests_total',
      help: `Proxied requests by route (its id; ${CATCH_ALL_ROUTE_LABEL}: UPSTREAM_URL; ${NO_ROUTE_LABEL}: no route, 404; ${OTHER_ROUTES_LABEL}: beyond the first ${MAX_ROUTE_LABELS} route ids) and status class`,
      labelNames: ['route', 'status'],
      registers: [registry],
      collect() {
        handOver(this);
      },
    });
  }

  /** The label of a route: its id while fewer than MAX_ROUTE_LABELS ids have one (or it has one already), else `other`. */
  labelOf(routeId: string): string {
    if (this.named.has(routeId)) return routeId;
    if (this.named.size >= MAX_ROUTE_LABELS) return OTHER_ROUTES_LABEL;
    this.named.add(routeId);
    return routeId;
  }

  inc(label: string, status: number): void {
    let counts = this.pending.get(label);
    if (counts === undefined) this.pending.set(label, (counts = [0, 0, 0, 0, 0]));
    counts[Math.min(4, Math.max(0, Math.floor(status / 100) - 1))]!++;
  }
}

/** An unlabelled histogram: an observation is a bucket search and three additions. */
class RequestPathHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Observations per bucket, not cumulative; the ones above the last bound only count in +Inf. */
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {
    this.counts = bounds.map(() => 0);
    // Not one of prom-client's classes, but what its registry reads: name, help, type and get().
    registry.registerMetric(this as unknown as Metric);
  }

  observe(seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    if (i < bounds.length) this.counts[i]!++;
    this.sum += seconds;
    this.count++;
  }

  /** prom-client's histogram shape: cumulative `_bucket`s with `le`, then `_sum` and `_count`. */
  get() {
    let cumulative = 0;
    const buckets = this.bounds.map((le, i) => {
      cumulative += this.counts[i]!;
      return { value: cumulative, labels: { le: String(le) }, metricName: `${this.name}_bucket` };
    });
    const values = [
      ...buckets,
      { value: this.count, labels: { le: '+Inf' }, metricName: `${this.name}_bucket` },
      { value: this.sum, labels: {}, metricName: `${this.name}_sum` },
      { value: this.count, labels: {}, metricName: `${this.name}_count` },
    ];
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }
}

/** The service's own registry: nothing leaks in from, or out to, prom-client's global one. */
export class Metrics {
  readonly registry = new Registry();

  readonly proxyRequests = new RequestPathCounter<'outcome', ProxyOutcome>(
    this.registry,
    'tollgate_proxy_requests_total',
    'Proxied requests by outcome',
    'outcome',
  );
  readonly routeRequests = new RouteRequestCounter(this.registry);
  /** CORS preflights Tollgate answered itself (src/proxy/cors.ts), by whether their origin was allowed. */
  readonly corsPreflights = new RequestPathCounter<'origin', 'allowed' | 'refused'>(
    this.registry,
    'tollgate_cors_preflights_total',
    'CORS preflights answered by Tollgate (never forwarded, charged to nobody), by whether the origin was allowed',
    'origin',
  );
  /** Usage-priced requests (src/proxy/settlement.ts): the units their responses reported, and those that reported none. */
  readonly settledUnits = new Counter({
    name: 'tollgate_settled_units_total',
    help: 'Units usage-priced requests were settled at, as their responses reported them',
    registers: [this.registry],
  });
  readonly unsettledRequests = new Counter({
    name: 'tollgate_unsettled_requests_total',
    help: 'Usage-priced requests whose response reported nothing readable (they keep their reservation as their cost), by reason: cut-short, malformed, not-reported, too-large, expired (a verify or gateway reservation not settled within RESERVATION_TTL_SECONDS), replica-gone (in flight on a process that died)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly requestsInFlightWritten = new Gauge({
    name: 'tollgate_requests_in_flight_written',
    help: 'Usage-priced requests in flight long enough to be written down: were this process to die, each would count at its reservation',
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'tollgate_rate_limited_total',
    help: 'Proxied requests refused with 429 because the key is over its limit',
    registers: [this.registry],
  });
  /** Counted on the request path of every refused credential (a flood of forged ones among them). */
  readonly authFailures = new RequestPathCounter<'reason', NonNullable<Refusal['authFailure']>>(
    this.registry,
    'tollgate_auth_failures_total',
    'Proxied requests refused for a missing, malformed, unknown, disabled or expired API key, by reason',
    'reason',
  );
  readonly upstreamDuration = new RequestPathHistogram(
    this.registry,
    'tollgate_upstream_duration_seconds',
    'Time from forwarding a request to the backend until its response headers arrive',
    LATENCY_BUCKETS,
  );
  readonly proxyOverhead = new RequestPathHistogram(
    this.registry,
    'tollgate_proxy_overhead_seconds',
    'Time Tollgate spends on a request before forwarding it (authentication and limiting)',
    LATENCY_BUCKETS,
  );
  readonly keyCache = new RequestPathCounter<'result', 'hit' | 'miss' | 'negative'>(
    this.registry,
    'tollgate_key_cache_requests_total',
    'Key cache look-ups by result: hit, miss (went to the database), negative (known-bad secret)',
    'result',
  );
  readonly redisDuration = new Histogram({
    name: 'tollgate_redis_command_duration_seconds',
    help: 'Redis round trips made by Tollgate, by operation',
    labelNames: ['operation'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly redisErrors = new Counter({
    name: 'tollgate_redis_errors_total',
    help: 'Redis operations that failed or timed out, by operation',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });
  // Summed over WORKERS like every other family, except the gauges below: a state or a lag is the worst worker's.
  readonly degraded = new Gauge({
    aggregator: 'max',
    name: 'tollgate_degraded',
    help: '1 while a dependency is unreachable and Tollgate runs degraded (redis: in-process limits or 503s)',
    labelNames: ['dependency'] as const,
    registers: [this.registry],
  });
  readonly usageFlushLag = new Gauge({
    aggregator: 'max',
    name: 'tollgate_usage_flush_lag_seconds',
    help: 'Seconds since usage was last written to its store successfully',
    registers: [this.registry],
  });
  readonly usageStoreLag = new Gauge({
    aggregator: 'max',
    name: 'tollgate_usage_store_lag_seconds',
    help: 'Redis mode: seconds since a flusher (on any replica) last moved the usage waiting in Redis into Postgres',
    registers: [this.registry],
  });
  readonly usageFlushFailures = new Counter({
    name: 'tollgate_usage_flush_failures_total',
    help: 'Usage writes that failed and will be retried, by stage',
    labelNames: ['stage'] as const,
    registers: [this.registry],
  });
  readonly usageBatchesSetAside = new Gauge({
    aggregator: 'max',
    name: 'tollgate_usage_batches_set_aside',
    help: 'Usage batches the database refused (a data exception or constraint), set aside and tried again at each flush; in Redis mode those of the whole fleet',
    registers: [this.registry],
  });
  readonly usageDropped = new Counter({
    name: 'tollgate_usage_dropped_total',
    help: 'Proxied requests whose usage could not be written to any store before the process exited',
    registers: [this.registry],
  });
  readonly billingExportSends = new Counter({
    name: 'tollgate_billing_export_sends_total',
    help: 'Requests to billing export receivers by outcome: delivered, refused (a 4xx, retried later), unreachable (no answer or 5xx)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly verifications = new RequestPathCounter<'code', string>(
    this.registry,
    'tollgate_verifications_total',
    'Verify decisions (POST /tollgate/verify) by code: ok, or the refusal the proxy would answer',
    'code',
  );
  readonly extauthDecisions = new Counter({
    name: 'tollgate_extauth_decisions_total',
    help: "Gateways' authorization calls (EXTAUTH_PORT, EXTAUTH_GRPC_PORT) by protocol and code: ok, or the refusal the proxy would answer",
    labelNames: ['protocol', 'code'] as const,
    registers: [this.registry],
  });
  readonly managementRequests = new Counter({
    name: 'tollgate_management_requests_total',
    help: 'Management API requests by status code',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly traceSpansDropped = new Counter({
    name: 'tollgate_trace_spans_dropped_total',
    help: 'Spans never delivered to the OpenTelemetry collector, by reason: queue_full (the bounded queue was full), export_failed (the collector was down, refused or timed out)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_' });
    // Gauges whose names end in _total break the exposition conventions (promtool check metrics).
    for (const name of [
      'nodejs_active_handles_total',
      'nodejs_active_requests_total',
      'nodejs_active_resources_total',
    ]) {
      this.registry.removeSingleMetric('tollgate_' + name);
    }
  }

  /** Database pool gauges, read at scrape time. */
  watchPool(pool: { totalCount: number; idleCount: number; waitingCount: number }): void {
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read());
        },
      });
    gauge('tollgate_db_pool_connections', 'Open Postgres connections', () => pool.totalCount);
    gauge('tollgate_db_pool_idle', 'Idle Postgres connections', () => pool.idleCount);
    gauge('tollgate_db_pool_waiting', 'Queries waiting for a Postgres connection', () => pool.waitingCount);
  }
}
