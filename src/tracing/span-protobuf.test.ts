import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
} from '@opentelemetry/api';
import { TraceState, type InstrumentationScope } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import type protobuf from 'protobufjs';
import { traceRequestType } from '../../scripts/lib/otlp-trace-export.mjs';
import { RequestClock, RequestSpan } from './request-span.js';
import { encodeSpans, spanSerializer } from './span-protobuf.js';

/** Spans made by the SDK itself, as the exporter receives them. */
function recorder(resource: Attributes) {
  const ended: ReadableSpan[] = [];
  const provider = new TracerProvider({
    sampler: new AlwaysOnSampler(),
    resource: resourceFromAttributes(resource),
    spanProcessors: [
      {
        onStart: () => {},
        onEnd: (span) => void ended.push(span),
        forceFlush: () => Promise.resolve(),
        shutdown: () => Promise.resolve(),
      },
    ],
  });
  return { tracer: provider.getTracer('tollgate'), ended };
}

const attributeValue = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.string({ minLength: 120, maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.boolean(),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const attributes = fc.dictionary(fc.string({ minLength: 1, maxLength: 30 }), attributeValue, { maxKeys: 14 });

const spanPlan = fc.record({
  name: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  kind: fc.constantFrom(
    SpanKind.INTERNAL,
    SpanKind.SERVER,
    SpanKind.CLIENT,
    SpanKind.PRODUCER,
    SpanKind.CONSUMER,
  ),
  parent: fc.constantFrom('none', 'local', 'remote', 'remote with tracestate'),
  sampledParent: fc.boolean(),
  attributes,
  status: fc.constantFrom('unset', 'ok', 'error', 'error with message'),
  child: fc.boolean(),
});

type SpanPlan = typeof spanPlan extends fc.Arbitrary<infer T> ? T : never;

let Request: protobuf.Type;
beforeAll(async () => {
  Request = await traceRequestType();
});

/** What a collector reads from the bytes, every field spelled out. */
const decoded = (bytes: Uint8Array) =>
  Request.toObject(Request.decode(bytes), { longs: String, enums: Number, bytes: String, defaults: true });

function makeSpans(plans: SpanPlan[], resource: Attributes): ReadableSpan[] {
  const { tracer, ended } = recorder(resource);
  for (const plan of plans) {
    let parent = ROOT_CONTEXT;
    if (plan.parent === 'local') parent = trace.setSpan(ROOT_CONTEXT, tracer.startSpan('parent'));
    else if (plan.parent !== 'none')
      parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        spanId: '00f067aa0ba902b7',
        traceFlags: plan.sampledParent ? TraceFlags.SAMPLED : TraceFlags.NONE,
        isRemote: true,
        ...(plan.parent === 'remote with tracestate' && { traceState: new TraceState('vendor=abc,other=1') }),
      });
    const span = tracer.startSpan(plan.name, { kind: plan.kind }, parent);
    span.setAttributes(plan.attributes);
    if (plan.status === 'ok') span.setStatus({ code: SpanStatusCode.OK });
    if (plan.status.startsWith('error'))
      span.setStatus({
        code: SpanStatusCode.ERROR,
        ...(plan.status === 'error with message' && { message: 'backend said ✗' }),
      });
    if (plan.child) context.with(trace.setSpan(parent, span), () => tracer.startSpan('child').end());
    span.end();
  }
  return ended;
}

describe('spans encoded in one pass', () => {
  it("reads back as exactly what the SDK's serializer writes, through the official opentelemetry-proto definitions", () => {
    fc.assert(
      fc.property(fc.array(spanPlan, { minLength: 1, maxLength: 8 }), attributes, (plans, resource) => {
        const spans = makeSpans(plans, { ...resource, 'service.name': 'tollgate' });
        const ours = encodeSpans(spans);
        expect(ours).toBeDefined();
        expect(decoded(ours!)).toEqual(decoded(ProtobufTraceSerializer.serializeRequest(spans)!));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps lengths right where a span or an attribute outgrows a one-byte length, or the buffer its first guess', () => {
    const long = 'é'.repeat(9_000); // 18,000 bytes: a three-byte length inside a span inside the batch
    const spans = makeSpans(
      Array.from({ length: 40 }, (_, i) => ({
        name: `span ${i}`,
        kind: SpanKind.SERVER,
        parent: 'none',
        sampledParent: true,
        attributes: { big: long, small: i, negative: -i - 1, huge: 2 ** 60, ratio: i / 7 },
        status: 'unset',
        child: false,
      })),
      { 'service.name': 'tollgate' },
    );
    expect(decoded(encodeSpans(spans)!)).toEqual(decoded(ProtobufTraceSerializer.serializeRequest(spans)!));
  });

  it("puts the proxy's request spans in the tracer's scope, as the SDK's serializer does, at the times they were given", () => {
    const [first, second] = makeSpans(
      ['first', 'second'].map((name) => ({
        name,
        kind: SpanKind.SERVER,
        parent: 'none',
        sampledParent: true,
        attributes: { n: 1 },
        status: 'unset',
        child: false,
      })),
      { 'service.name': 'tollgate' },
    );
    const clock = new RequestClock();
    const request = (scope: InstrumentationScope) =>
      new RequestSpan(
        { resource: first!.resource, scope, onEnd: () => {} },
        'GET',
        SpanKind.CLIENT,
        {
          context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 },
          parent: first!.spanContext(),
          clock,
          atMs: clock.startMs + 1,
          attributes: { 'tollgate.cost': 1, 'url.full': 'http://backend/v1' },
        },
        clock.startMs + 3.5,
        true,
      );
    // The SDK's serializer puts spans in one scope when they hold the same scope object; ours when
    // their scopes have the same name, version and schema URL.
    const sameObject = [first!, request(first!.instrumentationScope), second!];
    const expected = decoded(ProtobufTraceSerializer.serializeRequest(sameObject)!) as {
      resourceSpans: { scopeSpans: { spans: { startTimeUnixNano: string; endTimeUnixNano: string }[] }[] }[];
    };
    expect(expected.resourceSpans[0]!.scopeSpans).toHaveLength(1);
    expect(decoded(encodeSpans(sameObject)!)).toEqual(expected);
    expect(decoded(encodeSpans([first!, request({ name: 'tollgate' }), second!])!)).toEqual(expected);
    const { startTimeUnixNano, endTimeUnixNano } = expected.resourceSpans[0]!.scopeSpans[0]!.spans[1]!;
    expect(BigInt(endTimeUnixNano) - BigInt(startTimeUnixNano)).toBe(2_500_000n);
  });

  it("hands a batch holding an event, a link or an array value to the SDK's serializer whole", () => {
    const { tracer, ended } = recorder({ 'service.name': 'tollgate' });
    tracer.startSpan('plain').end();
    const withEvent = tracer.startSpan('with event');
    withEvent.addEvent('happened');
    withEvent.end();
    expect(encodeSpans(ended)).toBeUndefined();
    expect(spanSerializer.serializeRequest(ended)).toEqual(ProtobufTraceSerializer.serializeRequest(ended));

    ended.length = 0;
    tracer.startSpan('with list', { attributes: { list: ['a', 'b'] } }).end();
    expect(encodeSpans(ended)).toBeUndefined();
    expect(spanSerializer.serializeRequest(ended)).toEqual(ProtobufTraceSerializer.serializeRequest(ended));
  });
});
