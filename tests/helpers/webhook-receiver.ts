/**
 * A webhook receiver on 127.0.0.1, as a customer would write one: it verifies every request with the
 * Standard Webhooks library's own `Webhook.verify` and dedupes by `webhook-id`. Its answer to each
 * request is programmable (a status, no answer at all, or a closed connection) so tests can play a
 * receiver that fails for a while. Its clock agrees with the sender's: a test that moves Tollgate's
 * (TEST_CLOCK_FILE, tests/helpers/test-clock.ts) gives the receiver the same one.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** How the receiver answers one request: a status, never (until closed), or by closing the connection. */
export type Answer = number | 'hang' | 'close';

export interface ReceivedAttempt {
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly body: string;
  /** Whether `Webhook.verify` accepted it with the secret the receiver was given. */
  readonly verified: boolean;
  /** The sender's port, to tell which process sent it. */
  readonly remotePort: number;
  readonly answer: Answer;
}

export interface WebhookEvent {
  readonly type: string;
  readonly timestamp: string;
  readonly data: Record<string, unknown>;
}

export class WebhookReceiver {
  /** Every request, in arrival order. */
  readonly attempts: ReceivedAttempt[] = [];
  /** Each event once, by webhook-id, as a receiver that dedupes keeps it (verified ones only). */
  readonly events = new Map<string, WebhookEvent>();
  /** The signing secret (`whsec_…`) of the webhook that sends here; set once it is created. */
  secret = '';
  /** Decides each answer; by default 204. */
  answer: (attempt: number, id: string) => Answer = () => 204;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    private readonly clock: () => number,
  ) {}

  /** `clock`: the receiver's, against which a delivery's timestamp must be recent (the senders' in tests). */
  static async start(path = '/hooks', clock: () => number = Date.now): Promise<WebhookReceiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new WebhookReceiver(
      server,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
      clock,
    );
    server.on('connection', (socket) => {
      receiver.sockets.add(socket);
      socket.once('close', () => receiver.sockets.delete(socket));
    });
    server.on('request', (req, res) => {
      void readBody(req).then((body) => {
        const answer = receiver.record(req, body);
        if (answer === 'hang') return;
        if (answer === 'close') {
          req.socket.destroy();
          return;
        }
        res.writeHead(answer).end();
      });
    });
    return receiver;
  }

  private record(req: IncomingMessage, body: string): Answer {
    const header = (name: string) => String(req.headers[name] ?? '');
    const id = header('webhook-id');
    let verified = false;
    let event: WebhookEvent | undefined;
    try {
      event = onClock(new Webhook(this.secret), this.clock).verify(body, {
        'webhook-id': id,
        'webhook-timestamp': header('webhook-timestamp'),
        'webhook-signature': header('webhook-signature'),
      }) as WebhookEvent;
      verified = true;
    } catch {
      // Recorded as not verified: a test that expects it fails.
    }
    const answer = this.answer(this.attempts.filter((a) => a.id === id).length + 1, id);
    this.attempts.push({
      id,
      timestamp: header('webhook-timestamp'),
      signature: header('webhook-signature'),
      body,
      verified,
      remotePort: req.socket.remotePort!,
      answer,
    });
    if (verified && typeof answer === 'number' && answer < 300 && !this.events.has(id))
      this.events.set(id, event!);
    return answer;
  }

  /** The events received of `type`, each once. */
  ofType(type: string): WebhookEvent[] {
    return [...this.events.values()].filter((event) => event.type === type);
  }

  attemptsOf(id: string): ReceivedAttempt[] {
    return this.attempts.filter((a) => a.id === id);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/**
 * Standard Webhooks' `verify` checks a timestamp's age against `Date.now()`: this has it check against
 * `clock` instead, its own tolerance and signature check unchanged (the timestamp is shifted by the
 * clock's lead for the age check only, and back for the signature).
 */
function onClock(webhook: Webhook, clock: () => number): Webhook {
  const library = webhook as unknown as { verifyTimestamp(header: string): Date };
  const checkAge = library.verifyTimestamp.bind(webhook);
  library.verifyTimestamp = (header) => {
    const leadS = Math.round((clock() - Date.now()) / 1000);
    return new Date(checkAge(String(Number.parseInt(header, 10) - leadS)).getTime() + leadS * 1000);
  };
  return webhook;
}
