import type { Metrics } from '../ops/metrics.js';
import { setTracer, type Tracing } from './tracer.js';
import type { TracingSettings } from './tracing-settings.js';

/**
 * Loads the OpenTelemetry SDK (a dynamic import: a Tollgate without OTEL_* never loads it), makes the
 * tracer the hooks of the request path use, and returns it for the log lines and the shutdown.
 */
export async function startTracing(settings: TracingSettings, metrics: Metrics): Promise<Tracing> {
  const { otelTracing } = await import('./otel-setup.js');
  const tracing = otelTracing(settings, (reason, count) => metrics.traceSpansDropped.inc({ reason }, count));
  setTracer(tracing);
  return tracing;
}
