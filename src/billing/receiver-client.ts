import { Agent, request } from 'undici';
import { tracer } from '../tracing/tracer.js';
import { FORMATS } from './formats/index.js';
import { credentialSlack, outcomeOf, redacted, type SendOutcome } from './send-outcome.js';
import type { ExportTarget, UsageSend } from './usage-send.js';

/**
 * The most of a receiver's answer read: enough for an error message or a duplicate's code (and as much
 * again as a credential's longest form, which `redacted` drops from the end of an answer that was cut).
 */
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
      const answer = await readSome(res.body, MAX_BODY_BYTES + credentialSlack(target.credential));
      return outcomeOf(
        res.statusCode,
        redacted(answer.text, target.credential, answer.cut),
        format.alreadyHeld?.(res.statusCode, answer.text) ?? false,
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

/**
 * The first `maxBytes` of a body as text, and whether there may be more (`cut`); the rest is discarded
 * so the connection can be reused.
 */
async function readSome(
  body: AsyncIterable<Buffer> & { dump(): Promise<void> },
  maxBytes: number,
): Promise<{ text: string; cut: boolean }> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    length += chunk.length;
    if (length >= maxBytes) break;
  }
  await body.dump().catch(() => {});
  return { text: Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8'), cut: length >= maxBytes };
}
