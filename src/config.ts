import { canonicalAddress } from './net/canonical-address.js';
import { BODY_MATCH_MAX_BYTES_DEFAULT } from './metering/request-body.js';
import { ORIGIN_PATTERN } from './plans/origins.js';
import { parsePlan, type Plan } from './plans/plan.js';
import { tracingSettings, TracingSettingError, type TracingSettings } from './tracing/tracing-settings.js';

/**
 * How long node-postgres waits for a connection, and for the answer to one statement
 * (DATABASE_CONNECT_TIMEOUT_MS, DATABASE_QUERY_TIMEOUT_MS).
 */
export interface PostgresTimeouts {
  readonly connectMs: number;
  readonly queryMs: number;
}

export const POSTGRES_TIMEOUTS_DEFAULT: PostgresTimeouts = { connectMs: 2_000, queryMs: 5_000 };

/** Every setting of the service, validated once at start-up and passed in; never read as a global. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** The catch-all backend: where a request no route matches goes. `undefined` (UPSTREAM_URL=""): none, 404. */
  readonly upstreamUrl: URL | undefined;
  /** `undefined`: generate one at start-up and print it once. */
  readonly rootToken: string | undefined;
  readonly databaseUrl: string | undefined;
  /** How long to wait for a Postgres connection, and for a statement's answer (DATABASE_*_TIMEOUT_MS). */
  readonly databaseTimeouts: PostgresTimeouts;
  readonly redisUrl: string | undefined;
  /** Comma-separated `host:port` seeds: Redis Cluster instead of a single Redis. */
  readonly redisClusterNodes: readonly string[] | undefined;
  readonly redisKeyPrefix: string;
  /** How long a Redis command may take before it counts as Redis failing (REDIS_COMMAND_TIMEOUT_MS). */
  readonly redisCommandTimeoutMs: number;
  readonly dataDir: string;
  /** 32 bytes; `undefined` only in embedded mode, where it is generated into `dataDir`. */
  readonly secretEncryptionKey: Buffer | undefined;
  /** Older keys that still decrypt, for rotation (`SECRET_ENCRYPTION_KEY_PREVIOUS`). */
  readonly previousEncryptionKeys: readonly Buffer[];
  readonly opsPort: number;
  readonly defaultRateLimit: Plan | undefined;
  readonly customerIdHeader: string;
  /** The catch-all's CORS policy (CORS_ALLOWED_ORIGINS, docs/guides/browser.md); empty: none. */
  readonly corsAllowedOrigins: readonly string[];
  readonly managementPrefix: string;
  readonly redisFailureMode: 'open' | 'closed';
  readonly upstreamTimeoutMs: number;
  /** The most of a request body read to match or reserve on it (BODY_MATCH_MAX_BYTES); larger: 413. */
  readonly bodyMatchMaxBytes: number;
  readonly shutdownTimeoutMs: number;
  /** Audit log entries older than this are deleted (AUDIT_RETENTION_DAYS). */
  readonly auditRetentionDays: number;
  /** How long usage over time is kept at each granularity (USAGE_RETENTION_*). */
  readonly usageRetention: UsageRetentionSettings;
  /** How long the failure log keeps an entry, days (FAILURE_LOG_RETENTION_DAYS). */
  readonly failureLogRetentionDays: number;
  /** How soon a replica that died gives back its places of concurrency limits, seconds (CONCURRENCY_LEASE_SECONDS). */
  readonly concurrencyLeaseSeconds: number;
  /** How long a verify or gateway reservation may be settled, seconds (RESERVATION_TTL_SECONDS). */
  readonly reservationTtlSeconds: number;
  /** When billing exports run and when a bucket is closed (BILLING_EXPORT_*). */
  readonly billingExport: BillingExportSettings;
  readonly logLevel: string;
  readonly workers: number;
  /** How many proxy hops in front of Tollgate may set X-Forwarded-For, or which addresses. */
  readonly trustProxy: TrustProxy;
  readonly production: boolean;
  /** Serve the web console under {managementPrefix}/tollgate/console/ (CONSOLE=off: not at all). */
  readonly console: boolean;
  /** Tests only (TEST_CLOCK_FILE): the file whose offset moves this process's clock (src/ops/test-clock.ts). */
  readonly testClockFile: string | undefined;
  /** OpenTelemetry traces (the standard OTEL_* variables); undefined: off, and the SDK never loaded. */
  readonly tracing: TracingSettings | undefined;
  /** Where the portal's API reference may be fetched from (PORTAL_REFERENCE_ALLOW_HTTP, _ALLOW_PRIVATE). */
  readonly portalReference: { readonly allowHttp: boolean; readonly allowPrivate: boolean };
  /** Secrets' prefix and what a leak report does (docs/guides/leaked-keys.md). */
  readonly leaks: LeakSettings;
  /** Gateways' authorization calls (docs/guides/external-authorization.md). */
  readonly extauth: ExtauthSettings;
}

export interface ExtauthSettings {
  /** EXTAUTH_PORT: forward auth for nginx, Caddy, Traefik and Envoy's HTTP ext_authz; undefined: off. */
  readonly port: number | undefined;
  /** EXTAUTH_GRPC_PORT: Envoy's ext_authz and rate limit services over gRPC; undefined: off. */
  readonly grpcPort: number | undefined;
  /** EXTAUTH_TRUSTED_HOPS: the client is this entry of X-Forwarded-For from its end. */
  readonly trustedHops: number;
  /** EXTAUTH_RLS_DOMAIN: the rate limit service's domain; calls for another are answered OK, uncounted. */
  readonly rlsDomain: string;
}

/** KEY_PREFIX: 2–16 of `[a-z0-9_]`, ending in `_` (src/keys/secret-format.ts). */
export const KEY_PREFIX_PATTERN = /^[a-z0-9_]{1,15}_$/;
export const DEFAULT_KEY_PREFIX = 'tg_';
export const LEAKED_KEY_ACTIONS = ['disable', 'roll', 'notify'] as const;
export type LeakedKeyAction = (typeof LEAKED_KEY_ACTIONS)[number];

export interface LeakSettings {
  /** KEY_PREFIX: what new secrets start with. */
  readonly keyPrefix: string;
  /** LEAKED_KEY_ACTION: what becomes of a key reported leaked. */
  readonly action: LeakedKeyAction;
  /** GITHUB_SECRET_SCANNING_KEYS_URL: where GitHub's signing keys are read. */
  readonly githubKeysUrl: URL;
}

export type TrustProxy = { readonly hops: number } | { readonly addresses: readonly string[] };

/** How long each granularity is kept: minutes and hours in hours and days, days in days, months in months. */
export interface UsageRetentionSettings {
  readonly minuteHours: number;
  readonly hourDays: number;
  readonly dayDays: number;
  readonly monthMonths: number;
}

export interface BillingExportSettings {
  /** How often each replica looks for closed buckets to send and sends to retry (BILLING_EXPORT_RUN_SECONDS). */
  readonly runEverySeconds: number;
  /** How long after its end a bucket is closed and sent (BILLING_EXPORT_SETTLE_SECONDS): later usage goes as a correction. */
  readonly settleSeconds: number;
}

/** One line that names the variable and what is wrong with it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return value;
}

function url(env: Env, name: string, protocols: readonly string[]): URL | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return parsed;
}

function encryptionKey(name: string, raw: string): Buffer {
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== raw.trim().replace(/=+$/, '')) {
    throw new ConfigError(name, 'must be 32 bytes encoded in base64 (openssl rand -base64 32)');
  }
  return key;
}

function trustProxy(raw: string | undefined): TrustProxy {
  if (raw === undefined || raw === '' || raw === 'false') return { hops: 0 };
  if (/^\d+$/.test(raw)) return { hops: Number(raw) };
  const addresses = raw.split(',').map((a) => a.trim());
  if (addresses.some((a) => !/^[0-9a-fA-F:.]+$/.test(a))) {
    throw new ConfigError('TRUST_PROXY', 'must be a hop count or a comma-separated list of IP addresses');
  }
  // Compared with peers as the proxy spells them (src/net/canonical-address.ts).
  return { addresses: addresses.map(canonicalAddress) };
}

function tracing(env: Env): TracingSettings | undefined {
  try {
    return tracingSettings(env);
  } catch (err) {
    if (err instanceof TracingSettingError) throw new ConfigError(err.variable, err.problem);
    throw err;
  }
}

function leaks(env: Env): LeakSettings {
  const keyPrefix = env.KEY_PREFIX || DEFAULT_KEY_PREFIX;
  if (!KEY_PREFIX_PATTERN.test(keyPrefix))
    throw new ConfigError('KEY_PREFIX', 'must be 2 to 16 of a-z, 0-9 and _, ending in _ (e.g. acme_live_)');
  const action = (env.LEAKED_KEY_ACTION || 'disable') as LeakedKeyAction;
  if (!LEAKED_KEY_ACTIONS.includes(action))
    throw new ConfigError('LEAKED_KEY_ACTION', `must be disable, roll or notify, got "${action}"`);
  const githubKeysUrl =
    url(env, 'GITHUB_SECRET_SCANNING_KEYS_URL', ['https:', 'http:']) ??
    new URL('https://api.github.com/meta/public_keys/secret_scanning');
  return { keyPrefix, action, githubKeysUrl };
}

export function loadConfig(env: Env): Config {
  const production = env.NODE_ENV === 'production';
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:'])?.toString();
  const redisUrl = url(env, 'REDIS_URL', ['redis:', 'rediss:'])?.toString();

  // Unset: the default backend. Set empty: no catch-all, so only the route table forwards.
  const upstreamUrl =
    env.UPSTREAM_URL === undefined
      ? new URL('http://127.0.0.1:3000')
      : url(env, 'UPSTREAM_URL', ['http:', 'https:']);
  if (upstreamUrl && (upstreamUrl.search || upstreamUrl.hash)) {
    throw new ConfigError('UPSTREAM_URL', 'must not carry a query string or fragment');
  }

  const rootToken = env.ROOT_TOKEN === '' ? undefined : env.ROOT_TOKEN;
  if (rootToken === undefined && production) {
    throw new ConfigError('ROOT_TOKEN', 'must be set when NODE_ENV=production');
  }
  if (rootToken !== undefined && rootToken.length < 16) {
    throw new ConfigError('ROOT_TOKEN', 'must be at least 16 characters');
  }

  const rawKey = env.SECRET_ENCRYPTION_KEY;
  const secretEncryptionKey = rawKey ? encryptionKey('SECRET_ENCRYPTION_KEY', rawKey) : undefined;
  if (!secretEncryptionKey && databaseUrl) {
    throw new ConfigError('SECRET_ENCRYPTION_KEY', 'must be set when DATABASE_URL is set');
  }
  const previousEncryptionKeys = (env.SECRET_ENCRYPTION_KEY_PREVIOUS ?? '')
    .split(',')
    .filter((k) => k.trim() !== '')
    .map((k) => encryptionKey('SECRET_ENCRYPTION_KEY_PREVIOUS', k.trim()));

  let defaultRateLimit: Plan | undefined;
  if (env.DEFAULT_RATE_LIMIT) {
    defaultRateLimit = parsePlan(env.DEFAULT_RATE_LIMIT);
    if (!defaultRateLimit) {
      throw new ConfigError(
        'DEFAULT_RATE_LIMIT',
        'must look like 1000/hour, or up to four limits of different periods like 10/second,10000/day (periods: second, minute, hour, day, week, month, year)',
      );
    }
  }

  const customerIdHeader = (env.CUSTOMER_ID_HEADER || 'x-customer-id').toLowerCase();
  if (!/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(customerIdHeader)) {
    throw new ConfigError('CUSTOMER_ID_HEADER', 'must be a valid HTTP header name');
  }

  const corsAllowedOrigins = (env.CORS_ALLOWED_ORIGINS ?? '')
    .split(',')
    .map((origin) => origin.trim().toLowerCase())
    .filter((origin) => origin !== '');
  const origin = new RegExp(ORIGIN_PATTERN);
  const wrongOrigin = corsAllowedOrigins.find((o) => o !== '*' && !origin.test(o));
  if (wrongOrigin !== undefined) {
    throw new ConfigError(
      'CORS_ALLOWED_ORIGINS',
      `"${wrongOrigin}" is not *, an origin such as https://app.example.com or a wildcard such as https://*.example.com`,
    );
  }

  const managementPrefix = (env.MANAGEMENT_PREFIX ?? '').replace(/\/+$/, '');
  if (managementPrefix !== '' && !/^(\/[A-Za-z0-9._~-]+)+$/.test(managementPrefix)) {
    throw new ConfigError('MANAGEMENT_PREFIX', 'must be empty or a path such as /admin');
  }

  const redisFailureMode = env.REDIS_FAILURE_MODE || 'open';
  if (redisFailureMode !== 'open' && redisFailureMode !== 'closed') {
    throw new ConfigError('REDIS_FAILURE_MODE', `must be "open" or "closed", got "${redisFailureMode}"`);
  }

  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  }

  const redisClusterNodes = env.REDIS_CLUSTER_NODES
    ? env.REDIS_CLUSTER_NODES.split(',').map((n) => n.trim())
    : undefined;
  if (redisClusterNodes?.some((n) => !/^[^:\s]+:\d+$/.test(n))) {
    throw new ConfigError('REDIS_CLUSTER_NODES', 'must be a comma-separated list of host:port');
  }

  const consoleSetting = env.CONSOLE || 'on';
  if (consoleSetting !== 'on' && consoleSetting !== 'off') {
    throw new ConfigError('CONSOLE', `must be "on" or "off", got "${consoleSetting}"`);
  }

  const testClockFile = env.TEST_CLOCK_FILE || undefined;
  if (testClockFile !== undefined && production) {
    throw new ConfigError('TEST_CLOCK_FILE', 'a test clock is refused when NODE_ENV=production: unset it');
  }

  const workers = integer(env, 'WORKERS', 1, 1, 64);
  if (workers > 1 && !redisUrl && !redisClusterNodes) {
    throw new ConfigError(
      'WORKERS',
      'more than 1 needs REDIS_URL: in-process counters cannot be shared by workers',
    );
  }

  return Object.freeze({
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: env.HOST || '0.0.0.0',
    upstreamUrl,
    rootToken,
    databaseUrl,
    databaseTimeouts: {
      connectMs: integer(
        env,
        'DATABASE_CONNECT_TIMEOUT_MS',
        POSTGRES_TIMEOUTS_DEFAULT.connectMs,
        100,
        60_000,
      ),
      queryMs: integer(env, 'DATABASE_QUERY_TIMEOUT_MS', POSTGRES_TIMEOUTS_DEFAULT.queryMs, 100, 3_600_000),
    },
    redisUrl,
    redisClusterNodes,
    redisKeyPrefix: env.REDIS_KEY_PREFIX ?? 'tg:',
    redisCommandTimeoutMs: integer(env, 'REDIS_COMMAND_TIMEOUT_MS', 500, 10, 60_000),
    dataDir: env.DATA_DIR || './data',
    secretEncryptionKey,
    previousEncryptionKeys,
    opsPort: integer(env, 'OPS_PORT', 9090, 0, 65535),
    defaultRateLimit,
    customerIdHeader,
    corsAllowedOrigins,
    managementPrefix,
    redisFailureMode,
    upstreamTimeoutMs: integer(env, 'UPSTREAM_TIMEOUT_MS', 30000, 1, 3_600_000),
    bodyMatchMaxBytes: integer(
      env,
      'BODY_MATCH_MAX_BYTES',
      BODY_MATCH_MAX_BYTES_DEFAULT,
      1,
      64 * 1024 * 1024,
    ),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10000, 0, 3_600_000),
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, 1, 36_500),
    usageRetention: {
      minuteHours: integer(env, 'USAGE_RETENTION_MINUTE_HOURS', 48, 1, 8_760),
      hourDays: integer(env, 'USAGE_RETENTION_HOUR_DAYS', 90, 1, 3_650),
      dayDays: integer(env, 'USAGE_RETENTION_DAY_DAYS', 400, 1, 36_500),
      monthMonths: integer(env, 'USAGE_RETENTION_MONTH_MONTHS', 60, 1, 1_200),
    },
    failureLogRetentionDays: integer(env, 'FAILURE_LOG_RETENTION_DAYS', 7, 1, 3_650),
    concurrencyLeaseSeconds: integer(env, 'CONCURRENCY_LEASE_SECONDS', 30, 1, 3_600),
    reservationTtlSeconds: integer(env, 'RESERVATION_TTL_SECONDS', 900, 1, 86_400),
    billingExport: {
      runEverySeconds: integer(env, 'BILLING_EXPORT_RUN_SECONDS', 60, 1, 86_400),
      settleSeconds: integer(env, 'BILLING_EXPORT_SETTLE_SECONDS', 60, 0, 86_400),
    },
    logLevel,
    workers,
    trustProxy: trustProxy(env.TRUST_PROXY),
    production,
    console: consoleSetting === 'on',
    testClockFile,
    tracing: tracing(env),
    portalReference: {
      allowHttp: flag(env, 'PORTAL_REFERENCE_ALLOW_HTTP'),
      allowPrivate: flag(env, 'PORTAL_REFERENCE_ALLOW_PRIVATE'),
    },
    leaks: leaks(env),
    extauth: extauth(env),
  });
}

function extauth(env: Env): ExtauthSettings {
  const port = (name: string) => (env[name] ? integer(env, name, 0, 0, 65535) : undefined);
  const rlsDomain = env.EXTAUTH_RLS_DOMAIN || 'tollgate';
  if (!/^[\x21-\x7e]{1,128}$/.test(rlsDomain))
    throw new ConfigError('EXTAUTH_RLS_DOMAIN', 'must be 1 to 128 visible ASCII characters');
  return {
    port: port('EXTAUTH_PORT'),
    grpcPort: port('EXTAUTH_GRPC_PORT'),
    trustedHops: integer(env, 'EXTAUTH_TRUSTED_HOPS', 1, 1, 32),
    rlsDomain,
  };
}

/** A switch: unset, empty or `false` is off, `true` on; anything else is refused. */
function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const value = env[name] || 'false';
  if (value !== 'true' && value !== 'false')
    throw new ConfigError(name, `must be "true" or "false", got "${value}"`);
  return value === 'true';
}
