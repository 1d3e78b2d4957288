/**
 * A span of a proxied request, as the SDK's batch processor and exporters read it (`ReadableSpan`),
 * built once when its part of the request ends. The proxy's spans carry only Tollgate's own strings
 * and numbers, known when the request ends: written in one object, they skip the SDK span's check of
 * each attribute as it is set (docs/decisions/0127-request-spans.md).
 */
import {
  SpanStatusCode,
  type Attributes,
  type HrTime,
  type SpanContext,
  type SpanKind,
} from '@opentelemetry/api';
import { addHrTimes, millisToHrTime, type InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';

/** Where a request's spans sit in time: its wall-clock start and the monotonic clock read with it. */
export class RequestClock {
  private readonly startTime: HrTime = millisToHrTime(Date.now());
  /** The request's arrival on the monotonic clock. */
  readonly startMs = performance.now();

  /** `ms` of the monotonic clock (`performance.now()`) as a time of day. */
  at(ms: number): HrTime {
    return ms === this.startMs
      ? this.startTime
      : addHrTimes(this.startTime, millisToHrTime(ms - this.startMs));
  }
}

/** A request span before it ends: its ids, its parent's, and the attributes gathered so far. */
export interface SpanStart {
  readonly context: SpanContext;
  readonly parent: SpanContext | undefined;
  /** The request's clock, which every span of it shares. */
  readonly clock: RequestClock;
  /** When it began, on the monotonic clock. */
  readonly atMs: number;
  /** Tollgate's own strings and numbers; more are added until it ends. */
  readonly attributes: Attributes;
}

/** Where the finished spans go, and what they say they come from. */
export interface SpanSink {
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
  onEnd(span: ReadableSpan): void;
}

const NO_LINKS: ReadableSpan['links'] = [];
const NO_EVENTS: ReadableSpan['events'] = [];
const UNSET = { code: SpanStatusCode.UNSET } as const;
const ERROR = { code: SpanStatusCode.ERROR } as const;

export class RequestSpan implements ReadableSpan {
  readonly startTime: HrTime;
  readonly endTime: HrTime;
  readonly duration: HrTime;
  readonly parentSpanContext: SpanContext | undefined;
  readonly status: ReadableSpan['status'];
  readonly links = NO_LINKS;
  readonly events = NO_EVENTS;
  readonly ended = true;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  readonly attributes: Attributes;
  readonly resource: Resource;
  readonly instrumentationScope: InstrumentationScope;
  private readonly context: SpanContext;

  constructor(
    sink: SpanSink,
    readonly name: string,
    readonly kind: SpanKind,
    start: SpanStart,
    endMs: number,
    failed: boolean,
  ) {
    this.context = start.context;
    this.attributes = start.attributes;
    this.parentSpanContext = start.parent;
    this.startTime = start.clock.at(start.atMs);
    this.endTime = start.clock.at(endMs);
    this.duration = millisToHrTime(endMs - start.atMs);
    this.status = failed ? ERROR : UNSET;
    this.resource = sink.resource;
    this.instrumentationScope = sink.scope;
  }

  spanContext(): SpanContext {
    return this.context;
  }
}
