/**
 * One trace as a waterfall page, the way a tracing backend draws it: each span a row, indented under
 * its parent, its bar placed on the trace's time line, with the attributes a reader looks for. Used for
 * the picture in docs/guides/tracing.md, drawn from spans a real OTLP receiver decoded.
 */
import type { ReceivedSpan } from '../../helpers/otlp-receiver.js';

const KINDS: Record<number, string> = { 1: 'INTERNAL', 2: 'SERVER', 3: 'CLIENT' };
const COLOURS: Record<number, string> = { 1: '#8e6bd8', 2: '#2f7fd1', 3: '#1f9e74' };
const SHOWN = [
  'http.request.method',
  'url.path',
  'url.full',
  'http.response.status_code',
  'tollgate.key.id',
  'tollgate.route.id',
  'tollgate.outcome',
  'tollgate.cost',
];

const escape = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** The spans of one trace, parents before children, each with its depth. */
function ordered(spans: readonly ReceivedSpan[]): { span: ReceivedSpan; depth: number }[] {
  const ids = new Set(spans.map((s) => s.spanId));
  const out: { span: ReceivedSpan; depth: number }[] = [];
  const visit = (span: ReceivedSpan, depth: number) => {
    out.push({ span, depth });
    spans
      .filter((s) => s.parentSpanId === span.spanId)
      .sort((a, b) => a.startMs - b.startMs)
      .forEach((child) => visit(child, depth + 1));
  };
  spans.filter((s) => !ids.has(s.parentSpanId)).forEach((root) => visit(root, 0));
  return out;
}

export function waterfallPage(spans: readonly ReceivedSpan[]): string {
  const start = Math.min(...spans.map((s) => s.startMs));
  const total = Math.max(...spans.map((s) => s.endMs)) - start;
  const rows = ordered(spans).map(({ span, depth }) => {
    const left = ((span.startMs - start) / total) * 100;
    const width = Math.max(((span.endMs - span.startMs) / total) * 100, 0.4);
    const attributes = SHOWN.filter((k) => span.attributes[k] !== undefined)
      .map((k) => `<span class="attr">${escape(k)}=<b>${escape(String(span.attributes[k]))}</b></span>`)
      .join(' ');
    return `<div class="row">
  <div class="name" style="padding-left:${depth * 18 + 8}px">
    <span class="kind" style="background:${COLOURS[span.kind] ?? '#888'}">${KINDS[span.kind] ?? span.kind}</span>
    ${escape(span.name)} <span class="service">${escape(String(span.resource['service.name'] ?? ''))}</span>
    <div class="attrs">${attributes}</div>
  </div>
  <div class="lane"><div class="bar" style="left:${left}%;width:${width}%;background:${COLOURS[span.kind] ?? '#888'}"></div>
    <span class="ms" style="left:${Math.min(left + width, 88)}%">${(span.endMs - span.startMs).toFixed(2)} ms</span></div>
</div>`;
  });
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body { font: 13px system-ui, sans-serif; margin: 16px; color: #1d2330; background: #fff; }
h1 { font-size: 15px; margin: 0 0 10px; } h1 code { font-weight: normal; color: #555; }
.row { display: grid; grid-template-columns: 560px 1fr; border-top: 1px solid #e3e6ec; min-height: 44px; }
.name { padding: 6px 8px; } .kind { color: #fff; font-size: 10px; padding: 1px 5px; border-radius: 3px; margin-right: 6px; }
.service { color: #777; font-size: 11px; } .attrs { margin-top: 3px; color: #555; font-size: 11px; line-height: 1.5; }
.attr { margin-right: 8px; white-space: nowrap; } .lane { position: relative; border-left: 1px solid #e3e6ec; }
.bar { position: absolute; top: 14px; height: 14px; border-radius: 2px; } .ms { position: absolute; top: 13px; margin-left: 6px; font-size: 11px; color: #333; }
</style></head><body>
<h1>Trace <code>${escape(spans[0]!.traceId)}</code>: ${total.toFixed(2)} ms, ${spans.length} spans</h1>
${rows.join('\n')}
</body></html>`;
}
