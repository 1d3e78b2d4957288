/**
 * The OpenTelemetry SDK put together from the OTEL_* settings: the sampler, the W3C propagators, the
 * OTLP exporter of the chosen encoding behind a bounded batch queue, and the async context that lets
 * a span's children and log lines find it. Loaded by `startTracing` alone.
 */
import { context, type TextMapPropagator } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from '@opentelemetry/otlp-exporter-base/node-http';
import { TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { PooledIds } from './pooled-ids.js';
import { CountedSpanProcessor, type DropReason } from './counted-span-processor.js';
import { OtelTracing } from './otel-tracing.js';
import { spanSerializer } from './span-protobuf.js';
import type { TracingSettings } from './tracing-settings.js';

/** The instrumentation scope of every span Tollgate makes. */
const SCOPE = { name: 'tollgate' };

function samplerOf(settings: TracingSettings): Sampler {
  const root = (name: string): Sampler =>
    name.endsWith('always_on')
      ? new AlwaysOnSampler()
      : name.endsWith('always_off')
        ? new AlwaysOffSampler()
        : new TraceIdRatioBasedSampler(settings.samplerRatio);
  const name = settings.sampler;
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root: root(name) }) : root(name);
}

function propagatorOf(settings: TracingSettings): TextMapPropagator {
  return new CompositePropagator({
    propagators: settings.propagators.map((name) =>
      name === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator(),
    ),
  });
}

/**
 * OTLP/HTTP with protobuf bodies: the SDK's transport (headers, timeout, retries), with the spans
 * encoded by span-protobuf.ts rather than the SDK's two-pass serializer.
 */
function protobufExporter(options: {
  url: string;
  headers: Record<string, string>;
  timeoutMillis: number;
}): SpanExporter {
  const http = convertLegacyHttpOptions(options, 'TRACES', 'v1/traces', {
    'Content-Type': 'application/x-protobuf',
  });
  return new OTLPExporterBase<ReadableSpan[]>(
    createOtlpHttpExportDelegate(
      http,
      spanSerializer,
      'otlp_http_span_exporter',
      TraceExporterMetricsHelper,
      undefined,
    ),
  );
}

export function otelTracing(
  settings: TracingSettings,
  dropped: (reason: DropReason, count: number) => void,
): OtelTracing {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const exporterOptions = {
    url: settings.endpoint,
    headers: { ...settings.headers },
    timeoutMillis: settings.exportTimeoutMs,
  };
  const exporter =
    settings.protocol === 'http/json' ? new JsonExporter(exporterOptions) : protobufExporter(exporterOptions);
  const sampler = samplerOf(settings);
  const ids = new PooledIds();
  const resource = resourceFromAttributes({
    ...settings.resourceAttributes,
    'service.name': settings.serviceName,
  });
  const processor = new CountedSpanProcessor(
    exporter,
    {
      maxQueueSize: settings.maxQueueSize,
      maxExportBatchSize: settings.maxExportBatchSize,
      scheduledDelayMillis: settings.scheduleDelayMs,
      exportTimeoutMillis: settings.batchExportTimeoutMs,
    },
    dropped,
  );
  const provider = new TracerProvider({ sampler, idGenerator: ids, resource, spanProcessors: [processor] });
  const close = async (timeoutMs: number): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const givenUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    // A collector that hangs costs at most `timeoutMs` of the shutdown; its spans are then lost.
    await Promise.race([provider.shutdown().catch(() => {}), givenUp]);
    clearTimeout(timer);
  };
  return new OtelTracing(
    provider.getTracer(SCOPE.name),
    { resource, scope: SCOPE, onEnd: (span) => processor.onEnd(span) },
    sampler,
    ids,
    propagatorOf(settings),
    settings.propagators.includes('tracecontext'),
    close,
  );
}
