/**
 * The OTEL_* variables as loadConfig reads them (docs/guides/tracing.md): off unless an endpoint is
 * named, the standard defaults, and a bad value refused with a line naming its variable. And "off"
 * means off: no module the server loads at start imports the OpenTelemetry SDK, only the file that
 * start-tracing.ts imports dynamically when an endpoint is set.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('OTEL_* settings', () => {
  it('leave tracing off without an endpoint, with OTEL_TRACES_EXPORTER=none and with OTEL_SDK_DISABLED=true', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeUndefined();
    expect(loadConfig({ ...ENDPOINT, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
  });

  it('take the standard defaults, the traces path added to the base endpoint', () => {
    expect(loadConfig(ENDPOINT).tracing).toEqual({
      endpoint: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      exportTimeoutMs: 10_000,
      serviceName: 'tollgate',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      propagators: ['tracecontext', 'baggage'],
      maxQueueSize: 2048,
      maxExportBatchSize: 512,
      scheduleDelayMs: 5000,
      batchExportTimeoutMs: 30_000,
    });
  });

  it('use a traces endpoint as given, and read headers, resource attributes and the sampler', () => {
    const tracing = loadConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example/api/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=abc%3D%3D,x-tenant=a b',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=edge,deployment.environment=prod',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
      OTEL_PROPAGATORS: 'tracecontext',
    }).tracing!;
    expect(tracing).toEqual(
      expect.objectContaining({
        endpoint: 'https://otlp.example/api/traces',
        protocol: 'http/json',
        headers: { 'x-honeycomb-team': 'abc==', 'x-tenant': 'a b' },
        serviceName: 'edge',
        sampler: 'parentbased_traceidratio',
        samplerRatio: 0.01,
        propagators: ['tracecontext'],
      }),
    );
    expect(
      loadConfig({ ...ENDPOINT, OTEL_SERVICE_NAME: 'gw', OTEL_RESOURCE_ATTRIBUTES: 'service.name=edge' })
        .tracing!.serviceName,
    ).toBe('gw');
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_TRACES_SAMPLER', 'sometimes'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
    ['OTEL_PROPAGATORS', 'b3'],
    ['OTEL_BSP_MAX_QUEUE_SIZE', '0'],
    ['OTEL_EXPORTER_OTLP_HEADERS', 'no-equals-sign'],
    ['OTEL_TRACES_EXPORTER', 'zipkin'],
  ])('refuse %s=%s with a line naming it', (variable, value) => {
    const env = { ...ENDPOINT, [variable]: value };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(`^${variable}: `));
  });
});

describe('tracing off', () => {
  const ROOT = resolve(import.meta.dirname, '../..');
  const SRC = join(ROOT, 'src');
  const source = (file: string) => readFileSync(file, 'utf8');
  /** The value imports (not `import type`, not `await import(...)`) of a module of src/. */
  const staticImports = (file: string) =>
    [...source(file).matchAll(/^import (?!type )[^;]*?from '([^']+)';/gms)].map((m) => m[1]!);

  it('loads no OpenTelemetry code: only the dynamically imported set-up reaches the SDK', () => {
    const loaded = new Set<string>();
    const visit = (file: string) => {
      if (loaded.has(file)) return;
      loaded.add(file);
      for (const name of staticImports(file))
        if (name.startsWith('.')) visit(resolve(dirname(file), name.replace(/\.js$/, '.ts')));
    };
    visit(join(SRC, 'main.ts'));
    const sdkUsers = [...loaded].filter((file) =>
      staticImports(file).some((name) => name.startsWith('@opentelemetry/')),
    );
    expect(sdkUsers.map((f) => relative(ROOT, f))).toEqual([]);
    // And the SDK is there to load, behind the one dynamic import.
    const everySdkUser = readdirSync(join(SRC, 'tracing'))
      .map((f) => join(SRC, 'tracing', f))
      .filter((f) => staticImports(f).some((name) => name.startsWith('@opentelemetry/')));
    expect(everySdkUser.length).toBeGreaterThan(0);
    expect(source(join(SRC, 'tracing/start-tracing.ts'))).toContain("await import('./otel-setup.js')");
  });
});
