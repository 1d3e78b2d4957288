import type { Context } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import {
  BatchSpanProcessor,
  type BatchSpanProcessorOptions,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';

/** Why a span never reached the collector. */
export type DropReason = 'queue_full' | 'export_failed';

/** How much later than Tollgate's own bound on an export the batch processor's would fire. */
const PROCESSOR_BOUND_LATER_MS = 1_000;

/**
 * The SDK's batch processor, with every span it loses counted: those beyond its bounded queue (a
 * collector slower than the traffic, or hanging) and those of an export that failed (a collector down
 * or refusing). The queue is mirrored here, since the SDK only logs its drops: a sampled span enters
 * it at `onEnd` and leaves it when the batch it is in is handed to the exporter.
 *
 * The processor is told that every export succeeded, and each export is bounded here: on a failure
 * or its own timeout, the SDK's processor starts the next export and then marks itself idle while that
 * one is under way, so against a collector that hangs the exports under way doubled at every timeout
 * (docs/decisions/0134-one-export-at-a-time.md).
 */
export class CountedSpanProcessor implements SpanProcessor {
  private readonly batch: BatchSpanProcessor;
  private queued = 0;

  constructor(
    exporter: SpanExporter,
    private readonly options: Omit<BatchSpanProcessorOptions, 'exporter'> & {
      maxQueueSize: number;
      exportTimeoutMillis: number;
    },
    private readonly dropped: (reason: DropReason, count: number) => void,
  ) {
    this.batch = new BatchSpanProcessor({
      ...options,
      exportTimeoutMillis: options.exportTimeoutMillis + PROCESSOR_BOUND_LATER_MS,
      exporter: this.counting(exporter),
    });
  }

  private counting(exporter: SpanExporter): SpanExporter {
    return {
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void): void => {
        this.queued -= spans.length;
        let settled = false;
        const settle = (failed: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(bound);
          if (failed) this.dropped('export_failed', spans.length);
          done({ code: ExportResultCode.SUCCESS });
        };
        const bound = setTimeout(() => settle(true), this.options.exportTimeoutMillis);
        exporter.export(spans, (result) => settle(result.code !== ExportResultCode.SUCCESS));
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
  }

  onStart(span: Span, parentContext: Context): void {
    this.batch.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & 1) === 0) return; // not sampled: never queued
    if (this.queued >= this.options.maxQueueSize) {
      this.dropped('queue_full', 1);
      return;
    }
    this.queued++;
    this.batch.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.batch.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.batch.shutdown();
  }
}
