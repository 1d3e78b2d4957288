/**
 * The standard OpenTelemetry variables (OTEL_*) a Tollgate reads, parsed once like every other setting.
 * No OpenTelemetry code is loaded here: with no endpoint, tracing is off and nothing of it is imported.
 * docs/guides/tracing.md lists the variables.
 */

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export type PropagatorName = 'tracecontext' | 'baggage';

export interface TracingSettings {
  /** Where spans are POSTed: the traces endpoint as given, or `{OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`. */
  readonly endpoint: string;
  readonly protocol: 'http/protobuf' | 'http/json';
  readonly headers: Readonly<Record<string, string>>;
  /** How long one export may take before it is given up (OTEL_EXPORTER_OTLP_TIMEOUT). */
  readonly exportTimeoutMs: number;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerName;
  /** The ratio of the `traceidratio` samplers, 0 to 1. */
  readonly samplerRatio: number;
  readonly propagators: readonly PropagatorName[];
  /** The batch processor: spans kept waiting at most, spans per export, the wait between exports. */
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
  readonly scheduleDelayMs: number;
  /** How long the batch processor waits for one export (OTEL_BSP_EXPORT_TIMEOUT). */
  readonly batchExportTimeoutMs: number;
}

/** A setting that cannot be used, named by its variable (config.ts turns it into a ConfigError). */
export class TracingSettingError extends Error {
  constructor(
    readonly variable: string,
    readonly problem: string,
  ) {
    super(`${variable}: ${problem}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function whole(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max)
    throw new TracingSettingError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
  return value;
}

/** `key1=value1,key2=value2`, values percent-encoded (the W3C Baggage form the OTEL_* lists use). */
function pairs(env: Env, name: string): Record<string, string> {
  const raw = env[name];
  const parsed: Record<string, string> = {};
  if (raw === undefined || raw.trim() === '') return parsed;
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new TracingSettingError(name, 'must be a comma-separated list of key=value');
    try {
      parsed[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new TracingSettingError(name, `holds a badly percent-encoded pair "${pair.slice(0, at)}"`);
    }
  }
  return parsed;
}

function endpointOf(env: Env): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const [name, raw] = traces
    ? ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces]
    : ['OTEL_EXPORTER_OTLP_ENDPOINT', base];
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TracingSettingError(name, 'is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TracingSettingError(name, `must use http: or https:, got ${url.protocol}`);
  return traces ? url.href : url.href.replace(/\/*$/, '/v1/traces');
}

/** The tracing settings, or `undefined`: no endpoint, `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true`. */
export function tracingSettings(env: Env): TracingSettings | undefined {
  const exporter = env.OTEL_TRACES_EXPORTER || 'otlp';
  if (exporter === 'none' || env.OTEL_SDK_DISABLED === 'true') return undefined;
  if (exporter !== 'otlp')
    throw new TracingSettingError('OTEL_TRACES_EXPORTER', `must be "otlp" or "none", got "${exporter}"`);
  const endpoint = endpointOf(env);
  if (endpoint === undefined) return undefined;

  const protocolName = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[protocolName] || 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new TracingSettingError(protocolName, `must be "http/protobuf" or "http/json", got "${protocol}"`);

  const sampler = (env.OTEL_TRACES_SAMPLER || 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler))
    throw new TracingSettingError('OTEL_TRACES_SAMPLER', `must be one of ${SAMPLERS.join(', ')}`);
  const ratioRaw = env.OTEL_TRACES_SAMPLER_ARG;
  const samplerRatio = ratioRaw === undefined || ratioRaw === '' ? 1 : Number(ratioRaw);
  if (!(samplerRatio >= 0 && samplerRatio <= 1))
    throw new TracingSettingError(
      'OTEL_TRACES_SAMPLER_ARG',
      `must be a ratio from 0 to 1, got "${ratioRaw}"`,
    );

  const propagators = (env.OTEL_PROPAGATORS || 'tracecontext,baggage')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== 'none' && p !== '');
  for (const p of propagators)
    if (p !== 'tracecontext' && p !== 'baggage')
      throw new TracingSettingError(
        'OTEL_PROPAGATORS',
        `supports tracecontext, baggage and none, got "${p}"`,
      );

  const resourceAttributes = pairs(env, 'OTEL_RESOURCE_ATTRIBUTES');
  const maxQueueSize = whole(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000);
  return {
    endpoint,
    protocol,
    headers: {
      ...pairs(env, 'OTEL_EXPORTER_OTLP_HEADERS'),
      ...pairs(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'),
    },
    exportTimeoutMs: whole(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000, 1, 600_000),
    serviceName: env.OTEL_SERVICE_NAME || resourceAttributes['service.name'] || 'tollgate',
    resourceAttributes,
    sampler,
    samplerRatio,
    propagators: propagators as PropagatorName[],
    maxQueueSize,
    maxExportBatchSize: Math.min(
      maxQueueSize,
      whole(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000),
    ),
    scheduleDelayMs: whole(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, 0, 3_600_000),
    batchExportTimeoutMs: whole(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 3_600_000),
  };
}
