/**
 * Real HTTP receivers on 127.0.0.1 for billing exports, one per service, each taking requests only in
 * the format its service documents (anything else: 400, recorded in `formatErrors`) and deduplicating
 * as the service does: Stripe meter events by `identifier` (and replaying an `Idempotency-Key`'s first
 * answer), OpenMeter and CloudEvents by (`id`, `source`), Lago by `transaction_id` (a duplicate is a 422
 * `value_already_exist`). `duplicateStatus` 409 makes a receiver answer a duplicate with 409 Conflict, as
 * many CloudEvents receivers do. What they hold is summed by customer: after any fault, that sum must be the
 * usage Tollgate stored, exactly.
 *
 * Faults, set through `fault`: `status-500` answers 500 without taking the event; `hang` never answers;
 * `close` drops the connection before taking it; `close-after-taking` takes it and then drops the
 * connection (the answer is lost, the sender must retry under the same id); `echo-credential` refuses
 * with a 400 whose body repeats the Authorization header, as a careless service might (as it is, or as
 * `echo` writes it: JSON-escaped, URL-encoded…).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type ReceiverType = 'stripe' | 'openmeter' | 'lago' | 'cloudevents';
export type ReceiverFault =
  'none' | 'status-500' | 'hang' | 'close' | 'close-after-taking' | 'echo-credential';

/** One event a receiver holds. */
export interface HeldEvent {
  readonly id: string;
  readonly customer: string;
  readonly value: number;
  readonly eventName: string;
  /** The instant the event is dated at (epoch ms). */
  readonly timeMs: number;
}

/** What one request carried, once its format was checked. */
interface Parsed extends HeldEvent {
  /** The service's dedupe key. */
  readonly key: string;
}

class FormatError extends Error {}

const STRIPE_MAX_AGE_MS = 35 * 86_400_000;
const CLOUDEVENTS_TYPE = 'application/cloudevents+json';

function expect(condition: unknown, problem: string): asserts condition {
  if (!condition) throw new FormatError(problem);
}

function contentTypeIs(req: IncomingMessage, type: string): void {
  expect(
    (req.headers['content-type'] ?? '').split(';')[0]!.trim() === type,
    `content-type must be ${type}, got ${req.headers['content-type']}`,
  );
}

function json(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new FormatError('body is not JSON');
  }
}

const isRfc3339 = (text: unknown): text is string =>
  typeof text === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(text);

/** A CloudEvents 1.0 structured-mode event with a numeric `data.value`. */
function cloudEvent(req: IncomingMessage, body: string): Parsed {
  contentTypeIs(req, CLOUDEVENTS_TYPE);
  const e = json(body);
  expect(e.specversion === '1.0', 'specversion must be "1.0"');
  for (const attribute of ['id', 'source', 'type', 'subject'])
    expect(
      typeof e[attribute] === 'string' && e[attribute] !== '',
      `${attribute} must be a non-empty string`,
    );
  expect(isRfc3339(e.time), 'time must be RFC 3339');
  const data = e.data as Record<string, unknown> | undefined;
  expect(typeof data?.value === 'number' && Number.isInteger(data.value), 'data.value must be an integer');
  return {
    key: `${e.source as string}\n${e.id as string}`,
    id: e.id as string,
    customer: e.subject as string,
    value: data.value,
    eventName: e.type as string,
    timeMs: Date.parse(e.time),
  };
}

function stripeEvent(req: IncomingMessage, body: string): Parsed {
  contentTypeIs(req, 'application/x-www-form-urlencoded');
  const form = new URLSearchParams(body);
  const field = (name: string) => {
    const value = form.get(name);
    expect(value !== null && value !== '', `${name} is required`);
    return value;
  };
  const identifier = field('identifier');
  expect(identifier.length <= 100, 'identifier is at most 100 characters');
  const value = field('payload[value]');
  expect(/^\d+$/.test(value), 'payload[value] must be a whole number');
  const timestamp = field('timestamp');
  expect(/^\d+$/.test(timestamp), 'timestamp must be seconds since the epoch');
  const timeMs = Number(timestamp) * 1000;
  expect(
    timeMs >= Date.now() - STRIPE_MAX_AGE_MS && timeMs <= Date.now() + 300_000,
    'timestamp must be within the past 35 days and at most 5 minutes ahead',
  );
  return {
    key: identifier,
    id: identifier,
    customer: field('payload[stripe_customer_id]'),
    value: Number(value),
    eventName: field('event_name'),
    timeMs,
  };
}

function lagoEvent(req: IncomingMessage, body: string): Parsed {
  contentTypeIs(req, 'application/json');
  const event = json(body).event as Record<string, unknown> | undefined;
  expect(typeof event === 'object' && event !== null, 'body must be {event: {...}}');
  for (const field of ['transaction_id', 'external_subscription_id', 'code'])
    expect(typeof event[field] === 'string' && event[field] !== '', `event.${field} is required`);
  expect(
    typeof event.timestamp === 'number' && Number.isInteger(event.timestamp),
    'event.timestamp must be unix seconds',
  );
  const properties = event.properties as Record<string, unknown> | undefined;
  expect(typeof properties?.value === 'number', 'event.properties.value must be a number');
  const id = event.transaction_id as string;
  return {
    key: id,
    id,
    customer: event.external_subscription_id as string,
    value: properties.value,
    eventName: event.code as string,
    timeMs: event.timestamp * 1000,
  };
}

/** The documented path of each service ('' for CloudEvents: the configured URL is the endpoint). */
const PATHS: Record<ReceiverType, string> = {
  stripe: '/v1/billing/meter_events',
  openmeter: '/api/v1/events',
  lago: '/api/v1/events',
  cloudevents: '/ingest/events',
};
const PARSERS: Record<ReceiverType, (req: IncomingMessage, body: string) => Parsed> = {
  stripe: stripeEvent,
  openmeter: cloudEvent,
  lago: lagoEvent,
  cloudevents: cloudEvent,
};

export class BillingReceiver {
  fault: ReceiverFault = 'none';
  /** How `echo-credential` writes the Authorization header back; undefined: as it came. */
  echo: ((authorization: string) => string) | undefined;
  /** 409: an id it already holds is answered 409 Conflict instead of the service's own answer. */
  duplicateStatus: 409 | undefined;
  /** How long it waits after taking an event before answering: a sender killed meanwhile never hears. */
  answerDelayMs = 0;
  /** Events taken whose answer has not been written yet. */
  answering = 0;
  /** Every request that reached the receiver, with the id it carried (undefined: malformed). */
  readonly requests: { id: string | undefined; fault: ReceiverFault }[] = [];
  readonly formatErrors: string[] = [];
  private readonly held = new Map<string, HeldEvent>();
  /** Stripe: the first answer given to each Idempotency-Key. */
  private readonly replies = new Map<string, string>();
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  private constructor(
    readonly type: ReceiverType,
    /** The bearer credential it takes (401 otherwise); undefined: any request. */
    readonly credential: string | undefined,
  ) {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  static async start(type: ReceiverType, credential?: string): Promise<BillingReceiver> {
    const receiver = new BillingReceiver(type, credential);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  private get origin(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The `url` an export of this type is configured with: the base URL, or the full endpoint. */
  get url(): string {
    return this.type === 'cloudevents' ? this.origin + PATHS.cloudevents : this.origin;
  }

  /** The events held, each once. */
  events(): HeldEvent[] {
    return [...this.held.values()];
  }

  /** The units held, by customer. */
  totals(): Record<string, number> {
    const totals: Record<string, number> = {};
    for (const e of this.held.values()) totals[e.customer] = (totals[e.customer] ?? 0) + e.value;
    return totals;
  }

  /** Requests that carried an id seen before: retries, after a fault or a sender's death. */
  repeats(): number {
    const ids = this.requests.flatMap((r) => (r.id === undefined ? [] : [r.id]));
    return ids.length - new Set(ids).size;
  }

  total(): number {
    return this.events().reduce((n, e) => n + e.value, 0);
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const fault = this.fault;
    let event: Parsed;
    try {
      expect(
        req.method === 'POST' && req.url === PATHS[this.type],
        `expected POST ${PATHS[this.type]}, got ${req.method} ${req.url}`,
      );
      event = PARSERS[this.type](req, body);
    } catch (err) {
      if (!(err instanceof FormatError)) throw err;
      this.requests.push({ id: undefined, fault });
      this.formatErrors.push(err.message);
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: err.message }));
      return;
    }
    this.requests.push({ id: event.id, fault });
    if (this.credential !== undefined && req.headers.authorization !== `Bearer ${this.credential}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    if (fault === 'hang') return;
    if (fault === 'close') {
      req.socket.destroy();
      return;
    }
    if (fault === 'status-500') {
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal"}');
      return;
    }
    if (fault === 'echo-credential') {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(
          this.echo === undefined
            ? JSON.stringify({ error: `bad request with ${req.headers.authorization}` })
            : `{"error": "bad request with ${this.echo(req.headers.authorization ?? '')}"}`,
        );
      return;
    }
    const reply = this.take(event, req.headers['idempotency-key']);
    if (this.answerDelayMs > 0) {
      this.answering++;
      await new Promise((resolve) => setTimeout(resolve, this.answerDelayMs));
      this.answering--;
    }
    if (fault === 'close-after-taking') {
      req.socket.destroy();
      return;
    }
    res
      .writeHead(reply.status, reply.body === '' ? {} : { 'content-type': 'application/json' })
      .end(reply.body);
  }

  /** Holds the event unless the service would know it already; answers as the service does. */
  private take(
    event: Parsed,
    idempotencyKey: string | string[] | undefined,
  ): { status: number; body: string } {
    const duplicate = this.held.has(event.key);
    if (duplicate && this.duplicateStatus === 409)
      return { status: 409, body: JSON.stringify({ error: 'conflict', message: `${event.id} exists` }) };
    if (!duplicate)
      this.held.set(event.key, {
        id: event.id,
        customer: event.customer,
        value: event.value,
        eventName: event.eventName,
        timeMs: event.timeMs,
      });
    switch (this.type) {
      case 'stripe': {
        const key = typeof idempotencyKey === 'string' ? idempotencyKey : undefined;
        const replay = key === undefined ? undefined : this.replies.get(key);
        if (replay !== undefined) return { status: 200, body: replay };
        const answer = JSON.stringify({
          object: 'billing.meter_event',
          event_name: event.eventName,
          identifier: event.id,
          livemode: false,
          payload: { stripe_customer_id: event.customer, value: String(event.value) },
          timestamp: event.timeMs / 1000,
        });
        if (key !== undefined) this.replies.set(key, answer);
        return { status: 200, body: answer };
      }
      case 'lago':
        return duplicate
          ? {
              status: 422,
              body: JSON.stringify({
                status: 422,
                error: 'Unprocessable Entity',
                code: 'validation_errors',
                error_details: { transaction_id: ['value_already_exist'] },
              }),
            }
          : {
              status: 200,
              body: JSON.stringify({
                event: {
                  transaction_id: event.id,
                  external_subscription_id: event.customer,
                  code: event.eventName,
                },
              }),
            };
      case 'openmeter':
        return { status: 204, body: '' };
      case 'cloudevents':
        return { status: 202, body: '' };
    }
  }
}
