import { Agent, request } from 'undici';
import { tracer } from '../tracing/tracer.js';
import { FORMATS } from './formats/index.js';
import { retryAfterMs } from './retry-after.js';
import { credentialSlack, outcomeOf, redacted, type SendOutcome } from './send-outcome.js';
import { StripeSessions, type PostResult } from './stripe-sessions.js';
import type { ExportFormat, ExportTarget, ReceiverRequest, UsageSend } from './usage-send.js';

/**
 * The most of a receiver's answer read: enough for an error message or a duplicate's code (and as much
 * again as a credential's longest form, which `redacted` drops from the end of an answer that was cut).
 */
const MAX_BODY_BYTES = 4096;

/** What one batch of sends came to. */
export interface BatchResult {
  /** One per send of the batch, in its order. */
  readonly outcomes: readonly SendOutcome[];
  /** The receiver asked to wait this long before the next request (Retry-After of a 429 or 5xx). */
  readonly retryAfterMs: number | undefined;
}

/**
 * Sends usage to receivers over HTTP, apart from the proxy's connections: its own pool, a deadline on
 * every request (a receiver that hangs costs one timeout, never a stuck run), and answers read only as
 * far as an error message needs. A batch is one request; a receiver that refuses part of it has each of
 * its events judged on its own (docs/decisions/0078-billing-export-batches.md).
 */
export class ReceiverClient {
  private readonly agent: Agent;
  private readonly sessions: StripeSessions;

  constructor(private readonly timeoutMs: number) {
    this.agent = new Agent({
      connectTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connections: 8,
    });
    this.sessions = new StripeSessions((req, target) => this.post(req, target));
  }

  /** Sends `sends` (at most the format's batch size) as one request. */
  async send(target: ExportTarget, sends: readonly UsageSend[]): Promise<BatchResult> {
    const format = FORMATS[target.type];
    const answer = await this.request(target, format, sends);
    if (answer.kind === 'failed') {
      const outcome: SendOutcome = {
        kind: 'unreachable',
        status: null,
        error: redacted(answer.error, target.credential),
      };
      return { outcomes: sends.map(() => outcome), retryAfterMs: undefined };
    }
    const { status, text, cut } = answer;
    const partial = await this.partly(target, format, sends, status, text);
    if (partial) return partial;
    const outcome = outcomeOf(
      status,
      redacted(text, target.credential, cut),
      format.alreadyHeld?.(status, text) ?? false,
      sends.length,
    );
    // A batch refused as a whole, naming no event: each is tried alone, so one bad event holds back no other.
    if (outcome.kind === 'refused' && sends.length > 1) return this.oneByOne(target, sends);
    return {
      outcomes: sends.map(() => outcome),
      retryAfterMs: outcome.kind === 'unreachable' ? retryAfterMs(answer.retryAfter, Date.now()) : undefined,
    };
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  /**
   * A refusal that judges each event (Lago's): those held are delivered, those refused refused, and
   * those not taken sent again without the others; undefined when the answer judges none.
   */
  private async partly(
    target: ExportTarget,
    format: ExportFormat,
    sends: readonly UsageSend[],
    status: number,
    text: string,
  ): Promise<BatchResult | undefined> {
    if (status < 400 || status >= 500) return undefined;
    const verdicts = format.verdicts?.(status, text, sends.length);
    if (!verdicts || verdicts.every((v) => v.kind === 'untaken')) return undefined;
    const untaken = sends.filter((_, i) => verdicts[i]!.kind === 'untaken');
    const again = untaken.length > 0 ? await this.send(target, untaken) : undefined;
    let next = 0;
    const outcomes = verdicts.map((v): SendOutcome => {
      if (v.kind === 'held') return { kind: 'delivered', status };
      if (v.kind === 'refused')
        return { kind: 'refused', status, error: redacted(v.error, target.credential) };
      return again!.outcomes[next++]!;
    });
    return { outcomes, retryAfterMs: again?.retryAfterMs };
  }

  private async oneByOne(target: ExportTarget, sends: readonly UsageSend[]): Promise<BatchResult> {
    const outcomes: SendOutcome[] = [];
    for (const [i, send] of sends.entries()) {
      const result = await this.send(target, [send]);
      outcomes.push(result.outcomes[0]!);
      // The receiver fails now: the rest wait with it.
      if (result.outcomes[0]!.kind === 'unreachable') {
        outcomes.push(...sends.slice(i + 1).map(() => result.outcomes[0]!));
        return { outcomes, retryAfterMs: result.retryAfterMs };
      }
    }
    return { outcomes, retryAfterMs: undefined };
  }

  private request(
    target: ExportTarget,
    format: ExportFormat,
    sends: readonly UsageSend[],
  ): Promise<PostResult> {
    if (target.type === 'stripe-v2')
      return this.sessions.send(target, (token) => format.request(target, sends, token));
    return this.post(format.request(target, sends), target);
  }

  private async post({ url, headers, body }: ReceiverRequest, target: ExportTarget): Promise<PostResult> {
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
      const { text, cut } = await readSome(res.body, MAX_BODY_BYTES + credentialSlack(target.credential));
      return { kind: 'answer', status: res.statusCode, text, cut, retryAfter: res.headers['retry-after'] };
    } catch (err) {
      const { code, message } = err as { code?: string; message?: string };
      span?.end(null, code ?? 'unreachable');
      return { kind: 'failed', error: code ? `${code}: ${message}` : String(message ?? err) };
    }
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
