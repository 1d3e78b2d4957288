/**
 * One attempt of one delivery, as the Standard Webhooks specification has it: a POST of the event's
 * body with `webhook-id` (the event's id, the same on every attempt), `webhook-timestamp` (this
 * attempt's, in seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>`),
 * signed by the `standardwebhooks` library that receivers verify with. A 2xx answered within the
 * timeout is a success; anything else (another status, a redirect, no answer) is a failure to retry.
 */
import { Agent, request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { tracer } from '../tracing/tracer.js';

/** How long a receiver has to answer (docs/guides/webhooks.md). */
export const DELIVERY_TIMEOUT_MS = 15_000;

export interface AttemptResult {
  readonly delivered: boolean;
  /** The receiver's status; null: no answer. */
  readonly status: number | null;
  /** Why it failed when no status says it. */
  readonly error: string | null;
}

/** What a receiver may answer that Tollgate reads (and drops): enough for any acknowledgement. */
const ANSWER_BYTES = 64 * 1024;

/** A failure without an answer, in words an administrator reads in the delivery log. */
function describe(err: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `no answer within ${timeoutMs / 1000} s`;
  const { code, message } = err as { code?: string; message?: string };
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET') return 'connection closed before an answer';
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connection timed out';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  return `${code ?? 'error'}: ${message ?? String(err)}`.slice(0, 200);
}

export class WebhookSender {
  /** Its own connections: a slow receiver never waits on, nor holds, the proxy's pool to the backend. */
  private readonly agent: Agent;

  constructor(private readonly timeoutMs = DELIVERY_TIMEOUT_MS) {
    this.agent = new Agent({
      connect: { timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: 4_000,
    });
  }

  /** Sends `payload` to `url` signed with `secret` (`whsec_…`) as message `id` at `now`; never throws. */
  async send(
    url: string,
    secret: string,
    id: string,
    payload: string,
    now: Date,
    /** Names the webhook in the delivery's span, when traced. */
    webhookId = '',
  ): Promise<AttemptResult> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    const span = tracer?.client(`webhook ${webhookId}`, url, {
      'tollgate.webhook.id': webhookId,
      'tollgate.webhook.message_id': id,
    });
    try {
      const answer = await request(url, {
        dispatcher: this.agent,
        method: 'POST',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tollgate-Webhooks',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': new Webhook(secret).sign(id, now, payload),
          ...span?.headers,
        },
        body: payload,
      });
      // The status decides; the rest of the answer is read (within the same deadline) only to free the connection.
      await answer.body.dump({ limit: ANSWER_BYTES }).catch(() => {});
      const delivered = answer.statusCode >= 200 && answer.statusCode < 300;
      span?.end(answer.statusCode);
      return { delivered, status: answer.statusCode, error: null };
    } catch (err) {
      const error = describe(err, timedOut, this.timeoutMs);
      span?.end(null, error);
      return { delivered: false, status: null, error };
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
