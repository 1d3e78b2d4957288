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

/**
 * The SDK's batch processor, with every span it loses counted: those beyond its bounded queue (a
 * collector slower than the traffic, or hanging) and those of an export that failed (a collector down
 * or refusing). The queue is mirrored here, since the SDK only logs its drops: a sampled span enters
 * it at `onEnd` and leaves it when the batch it is in is handed to the exporter.
 */
export class CountedSpanProcessor implements SpanProcessor {
  private readonly batch: BatchSpanProcessor;
  private queued = 0;

  constructor(
    exporter: SpanExporter,
    private readonly options: Omit<BatchSpanProcessorOptions, 'exporter'> & { maxQueueSize: number },
    private readonly dropped: (reason: DropReason, count: number) => void,
  ) {
    this.batch = new BatchSpanProcessor({ ...options, exporter: this.counting(exporter) });
  }

  private counting(exporter: SpanExporter): SpanExporter {
    return {
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void): void => {
        this.queued -= spans.length;
        exporter.export(spans, (result) => {
          if (result.code !== ExportResultCode.SUCCESS) this.dropped('export_failed', spans.length);
          done(result);
        });
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
