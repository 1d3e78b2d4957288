import { Agent, request } from 'undici';
import { tracer } from '../tracing/tracer.js';
import { FORMATS } from './formats/index.js';
import { outcomeOf, redacted, type SendOutcome } from './send-outcome.js';
import type { ExportTarget, UsageSend } from './usage-send.js';

/** The most of a receiver's answer read: enough for an error message or a duplicate's code. */
const MAX_BODY_BYTES = 4096;

/**
 * Sends usage to receivers over HTTP, apart from the proxy's connections: its own pool, a deadline on
 * every request (a receiver that hangs costs one timeout, never a stuck run), and answers read only as
 * far as an error message needs.
 */
export class ReceiverClient {
  private readonly agent: Agent;

  constructor(private readonly timeoutMs: number) {
    this.agent = new Agent({
      connectTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connections: 8,
    });
  }

  async send(target: ExportTarget, send: UsageSend): Promise<SendOutcome> {
    const format = FORMATS[target.type];
    const { url, headers, body } = format.request(target, send);
    const span = tracer?.client(`billing export ${target.exportId}`, url, {
      'tollgate.billing_export.id': target.exportId,
      'tollgate.billing_export.type': target.type,
    });
    try {
      const res = await request(url, {
        method: 'POST',
        headers: span === undefined ? headers : { ...headers, ...span.headers },
        body,
        dispatcher: this.agent,
      });
      span?.end(res.statusCode);
      const answer = await readSome(res.body);
      return outcomeOf(
        res.statusCode,
        redacted(answer, target.credential),
        format.alreadyHeld?.(res.statusCode, answer) ?? false,
      );
    } catch (err) {
      const { code, message } = err as { code?: string; message?: string };
      span?.end(null, code ?? 'unreachable');
      return {
        kind: 'unreachable',
        status: null,
        error: redacted(code ? `${code}: ${message}` : String(message ?? err), target.credential),
      };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** The first bytes of a body as text; the rest is discarded so the connection can be reused. */
async function readSome(body: AsyncIterable<Buffer> & { dump(): Promise<void> }): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    length += chunk.length;
    if (length >= MAX_BODY_BYTES) break;
  }
  await body.dump().catch(() => {});
  return Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES).toString('utf8');
}
