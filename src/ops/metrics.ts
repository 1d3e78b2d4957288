import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How a proxied request ended; one label value each, never a per-key label (cardinality). */
export type ProxyOutcome =
  | 'forwarded'
  | 'limited'
  | 'unauthorized'
  | 'upstream_error'
  | 'upstream_timeout'
  | 'unavailable'
  | 'throttled'
  | 'bad_request';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The service's own registry: nothing leaks in from, or out to, prom-client's global one. */
export class Metrics {
  readonly registry = new Registry();

  readonly proxyRequests = new Counter({
    name: 'tollgate_proxy_requests_total',
    help: 'Proxied requests by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'tollgate_rate_limited_total',
    help: 'Proxied requests refused with 429 because the key is over its limit',
    registers: [this.registry],
  });
  readonly authFailures = new Counter({
    name: 'tollgate_auth_failures_total',
    help: 'Proxied requests refused for a missing, malformed or unknown API key, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly upstreamDuration = new Histogram({
    name: 'tollgate_upstream_duration_seconds',
    help: 'Time from forwarding a request to the backend until its response headers arrive',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly proxyOverhead = new Histogram({
    name: 'tollgate_proxy_overhead_seconds',
    help: 'Time Tollgate spends on a request before forwarding it (authentication and limiting)',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly keyCache = new Counter({
    name: 'tollgate_key_cache_requests_total',
    help: 'Key cache look-ups by result: hit, miss (went to the database), negative (known-bad secret)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
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
  readonly degraded = new Gauge({
    name: 'tollgate_degraded',
    help: '1 while a dependency is unreachable and Tollgate runs degraded (redis: in-process limits or 503s)',
    labelNames: ['dependency'] as const,
    registers: [this.registry],
  });
  readonly usageFlushLag = new Gauge({
    name: 'tollgate_usage_flush_lag_seconds',
    help: 'Seconds since usage was last written to its store successfully',
    registers: [this.registry],
  });
  readonly usageStoreLag = new Gauge({
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
  readonly managementRequests = new Counter({
    name: 'tollgate_management_requests_total',
    help: 'Management API requests by status code',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_' });
    // Gauges whose names end in _total break the exposition conventions (promtool check metrics).
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
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
