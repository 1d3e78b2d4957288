/**
 * Real HTTP receivers on 127.0.0.1 for billing exports, one per service, each taking requests only in
 * the format its service documents (anything else: 400, recorded in `formatErrors`), as many events a
 * request as it documents (Metronome, Stripe's v2 stream, Lago's batch endpoint, OpenMeter's batch: 1
 * to 100) and deduplicating as the service does: Stripe meter events by `identifier` (v1 also replays an
 * `Idempotency-Key`'s first answer; the v2 stream ignores a repeat), Metronome by `transaction_id` (a
 * repeat is ignored), OpenMeter and CloudEvents by (`id`, `source`), Lago by `transaction_id` (a batch
 * with an event it holds is a 422 naming it by index, and Lago then stores none of the batch). Stripe's
 * v2 stream takes only the token of a live meter event session (401
 * `billing_meter_event_session_expired` otherwise), which the secret key opens. What they hold is
 * summed by customer: after any fault, that sum must be the usage Tollgate stored, exactly.
 *
 * Faults, set through `fault`: `status-500` answers 500 without taking the events; `fail-half` does so
 * for every other request; `status-429` answers 429 with `Retry-After: retryAfterSeconds`; `hang` never
 * answers; `close` drops the connection before taking them; `close-after-taking` takes them and then
 * drops the connection (the answer is lost, the sender must retry under the same ids);
 * `echo-credential` refuses with a 400 whose body repeats the Authorization header, as a careless
 * service might. `refusedCustomers`: events for these customers are refused as the service refuses a
 * bad event (Lago: named in its 422; Metronome: the whole batch, 400). `duplicateStatus` 409 makes a
 * receiver answer a request holding an id it already has with 409 Conflict, as many CloudEvents
 * receivers do; `echo` says how `echo-credential` writes the header back (JSON-escaped, URL-encoded…).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import type { ExportType } from '../../src/billing/billing-export.js';

/** A receiver for each export type. */
export type ReceiverType = ExportType;
export type ReceiverFault =
  | 'none'
  | 'status-500'
  | 'fail-half'
  | 'status-429'
  | 'hang'
  | 'close'
  | 'close-after-taking'
  | 'echo-credential';

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
const CLOUDEVENTS_BATCH_TYPE = 'application/cloudevents-batch+json';
/** Events a batch request carries at most, for every service that takes batches. */
const MAX_BATCH = 100;
const SESSION_PATH = '/v2/billing/meter_event_session';
const SESSION_MS = 15 * 60_000;

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

/** The events of a batch body: an array of 1 to 100. */
function batchOf(items: unknown, where: string): Record<string, unknown>[] {
  expect(Array.isArray(items), `${where} must be an array`);
  expect(items.length >= 1 && items.length <= MAX_BATCH, `${where} must hold 1 to ${MAX_BATCH} events`);
  for (const item of items) expect(typeof item === 'object' && item !== null, `${where} holds objects`);
  return items as Record<string, unknown>[];
}

/** One CloudEvent (structured mode), or OpenMeter's batch of them. */
function cloudEvents(req: IncomingMessage, body: string): Parsed[] {
  if ((req.headers['content-type'] ?? '').startsWith(CLOUDEVENTS_BATCH_TYPE))
    return batchOf(json(body), 'the batch').map(cloudEvent);
  contentTypeIs(req, CLOUDEVENTS_TYPE);
  return [cloudEvent(json(body))];
}

/** A CloudEvents 1.0 structured-mode event with a numeric `data.value`. */
function cloudEvent(e: Record<string, unknown>): Parsed {
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

function stripeEvent(req: IncomingMessage, body: string): Parsed[] {
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
  return [
    {
      key: identifier,
      id: identifier,
      customer: field('payload[stripe_customer_id]'),
      value: Number(value),
      eventName: field('event_name'),
      timeMs,
    },
  ];
}

/** Stripe's v2 stream: `{events: [...]}`, the payload's values strings, the timestamp RFC 3339. */
function stripeStreamEvents(req: IncomingMessage, body: string): Parsed[] {
  contentTypeIs(req, 'application/json');
  expect(typeof req.headers['stripe-version'] === 'string', 'Stripe-Version is required');
  return batchOf(json(body).events, 'events').map((e) => {
    for (const field of ['event_name', 'identifier'])
      expect(typeof e[field] === 'string' && e[field] !== '', `events[].${field} is required`);
    expect((e.identifier as string).length <= 100, 'identifier is at most 100 characters');
    const payload = e.payload as Record<string, unknown> | undefined;
    expect(typeof payload?.stripe_customer_id === 'string', 'payload.stripe_customer_id must be a string');
    expect(
      typeof payload.value === 'string' && /^\d+$/.test(payload.value),
      'payload.value must be a string of digits',
    );
    expect(isRfc3339(e.timestamp), 'timestamp must be RFC 3339');
    const timeMs = Date.parse(e.timestamp);
    expect(
      timeMs >= Date.now() - STRIPE_MAX_AGE_MS && timeMs <= Date.now() + 300_000,
      'timestamp out of range',
    );
    return {
      key: e.identifier as string,
      id: e.identifier as string,
      customer: payload.stripe_customer_id,
      value: Number(payload.value),
      eventName: e.event_name as string,
      timeMs,
    };
  });
}

/** Metronome's ingest: a JSON array of events; `properties.value` a string of digits here. */
function metronomeEvents(req: IncomingMessage, body: string): Parsed[] {
  contentTypeIs(req, 'application/json');
  return batchOf(json(body), 'the body').map((e) => {
    for (const field of ['transaction_id', 'customer_id', 'event_type'])
      expect(typeof e[field] === 'string' && e[field] !== '', `${field} is required`);
    expect(isRfc3339(e.timestamp), 'timestamp must be RFC 3339');
    const properties = e.properties as Record<string, unknown> | undefined;
    expect(
      typeof properties?.value === 'string' && /^\d+$/.test(properties.value),
      'properties.value must be a string of digits',
    );
    return {
      key: e.transaction_id as string,
      id: e.transaction_id as string,
      customer: e.customer_id as string,
      value: Number(properties.value),
      eventName: e.event_type as string,
      timeMs: Date.parse(e.timestamp),
    };
  });
}

/** Lago's batch endpoint: `{events: [...]}`. */
function lagoEvents(req: IncomingMessage, body: string): Parsed[] {
  contentTypeIs(req, 'application/json');
  return batchOf(json(body).events, 'events').map(lagoEvent);
}

function lagoEvent(event: Record<string, unknown>): Parsed {
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
  'stripe-v2': '/v2/billing/meter_event_stream',
  metronome: '/v1/ingest',
  openmeter: '/api/v1/events',
  lago: '/api/v1/events/batch',
  cloudevents: '/ingest/events',
};
const PARSERS: Record<ReceiverType, (req: IncomingMessage, body: string) => Parsed[]> = {
  stripe: stripeEvent,
  'stripe-v2': stripeStreamEvents,
  metronome: metronomeEvents,
  openmeter: cloudEvents,
  lago: lagoEvents,
  cloudevents: cloudEvents,
};

export class BillingReceiver {
  fault: ReceiverFault = 'none';
  /** How `echo-credential` writes the Authorization header back; undefined: as it came. */
  echo: ((authorization: string) => string) | undefined;
  /** 409: an id it already holds is answered 409 Conflict instead of the service's own answer. */
  duplicateStatus: 409 | undefined;
  /** The `Retry-After` of a `status-429` answer, in seconds. */
  retryAfterSeconds = 30;
  /** Customers whose events the service refuses (an unknown customer, say). */
  readonly refusedCustomers = new Set<string>();
  /** How long it waits after taking events before answering: a sender killed meanwhile never hears. */
  answerDelayMs = 0;
  /** Requests whose events were taken and whose answer has not been written yet. */
  answering = 0;
  /** Every request that reached the receiver with the ids it carried (none: malformed), and the fault then. */
  readonly requests: { ids: string[]; fault: ReceiverFault }[] = [];
  readonly formatErrors: string[] = [];
  /** stripe-v2: meter event sessions opened, and the tokens still live (token → expiry, epoch ms). */
  sessionsOpened = 0;
  private readonly tokens = new Map<string, number>();
  private readonly held = new Map<string, HeldEvent>();
  /** Stripe: the first answer given to each Idempotency-Key. */
  private readonly replies = new Map<string, string>();
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  /** fail-half: whether the next request fails (the first does). */
  private failNext = true;

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

  /** stripe-v2: every session token expires now, as Stripe's do after 15 minutes. */
  expireSessions(): void {
    for (const token of this.tokens.keys()) this.tokens.set(token, 0);
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

  /** The units held, by customer and the instant each event is dated at (its bucket's start). */
  totalsByBucket(): Record<string, number> {
    const totals: Record<string, number> = {};
    for (const e of this.held.values()) {
      const at = `${e.customer} ${new Date(e.timeMs).toISOString()}`;
      totals[at] = (totals[at] ?? 0) + e.value;
    }
    return totals;
  }

  /** Every id any request carried, once. */
  ids(): Set<string> {
    return new Set(this.requests.flatMap((r) => r.ids));
  }

  /** Ids carried again by a later request: retries, after a fault or a sender's death. */
  repeats(): number {
    return this.requests.reduce((n, r) => n + r.ids.length, 0) - this.ids().size;
  }

  total(): number {
    return this.events().reduce((n, e) => n + e.value, 0);
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private answer(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (this.type === 'stripe-v2' && req.url === SESSION_PATH) return this.openSession(req, res);
    const fault = this.fault;
    let events: Parsed[];
    try {
      expect(
        req.method === 'POST' && req.url === PATHS[this.type],
        `expected POST ${PATHS[this.type]}, got ${req.method} ${req.url}`,
      );
      events = PARSERS[this.type](req, body);
    } catch (err) {
      if (!(err instanceof FormatError)) throw err;
      this.requests.push({ ids: [], fault });
      this.formatErrors.push(err.message);
      this.answer(res, 400, { error: err.message });
      return;
    }
    this.requests.push({ ids: events.map((e) => e.id), fault });
    if (!this.authorized(req)) {
      if (this.type === 'stripe-v2')
        this.answer(res, 401, {
          error: { type: 'invalid_request_error', code: 'billing_meter_event_session_expired' },
        });
      else this.answer(res, 401, { error: 'unauthorized' });
      return;
    }
    if (fault === 'hang') return;
    if (fault === 'close') {
      req.socket.destroy();
      return;
    }
    const failHalf = fault === 'fail-half' && this.failNext;
    if (fault === 'fail-half') this.failNext = !this.failNext;
    if (fault === 'status-500' || failHalf) {
      this.answer(res, 500, { error: 'internal' });
      return;
    }
    if (fault === 'status-429') {
      this.answer(res, 429, { error: 'rate_limited' }, { 'retry-after': String(this.retryAfterSeconds) });
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
    const reply = this.take(events, req.headers['idempotency-key']);
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

  /** The secret key, or (Stripe's v2 stream) the token of a live session. */
  private authorized(req: IncomingMessage): boolean {
    if (this.type !== 'stripe-v2')
      return this.credential === undefined || req.headers.authorization === `Bearer ${this.credential}`;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    return token !== undefined && (this.tokens.get(token) ?? 0) > Date.now();
  }

  /** Stripe's `POST /v2/billing/meter_event_session`: a token for 15 minutes, for the secret key. */
  private openSession(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'POST' || typeof req.headers['stripe-version'] !== 'string') {
      this.formatErrors.push('a session is opened by POST with Stripe-Version');
      this.answer(res, 400, { error: 'bad session request' });
      return;
    }
    if (this.credential !== undefined && req.headers.authorization !== `Bearer ${this.credential}`) {
      this.answer(res, 401, { error: { type: 'invalid_request_error', code: 'api_key_invalid' } });
      return;
    }
    this.sessionsOpened++;
    const token = `token_${randomBytes(12).toString('hex')}`;
    const expiresAt = Date.now() + SESSION_MS;
    this.tokens.set(token, expiresAt);
    this.answer(res, 200, {
      id: `mes_${randomBytes(8).toString('hex')}`,
      object: 'v2.billing.meter_event_session',
      authentication_token: token,
      created: new Date().toISOString(),
      expires_at: new Date(expiresAt).toISOString(),
      livemode: false,
    });
  }

  private hold(event: Parsed): void {
    if (!this.held.has(event.key))
      this.held.set(event.key, {
        id: event.id,
        customer: event.customer,
        value: event.value,
        eventName: event.eventName,
        timeMs: event.timeMs,
      });
  }

  /** Holds the events unless the service would know them already or refuse them; answers as the service does. */
  private take(
    events: Parsed[],
    idempotencyKey: string | string[] | undefined,
  ): { status: number; body: string } {
    const refused = (e: Parsed) => this.refusedCustomers.has(e.customer);
    const known = events.find((e) => this.held.has(e.key));
    if (known !== undefined && this.duplicateStatus === 409)
      return { status: 409, body: JSON.stringify({ error: 'conflict', message: `${known.id} exists` }) };
    switch (this.type) {
      case 'stripe': {
        const [event] = events as [Parsed];
        this.hold(event);
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
      case 'lago': {
        // Lago validates the whole batch first and stores none of it when any event fails.
        const details: Record<string, unknown> = {};
        for (const [i, e] of events.entries()) {
          if (this.held.has(e.key)) details[i] = { transaction_id: ['value_already_exist'] };
          else if (refused(e)) details[i] = { external_subscription_id: ['subscription_not_found'] };
        }
        if (Object.keys(details).length > 0)
          return {
            status: 422,
            body: JSON.stringify({
              status: 422,
              error: 'Unprocessable Entity',
              code: 'validation_errors',
              error_details: details,
            }),
          };
        events.forEach((e) => this.hold(e));
        return {
          status: 200,
          body: JSON.stringify({ events: events.map((e) => ({ transaction_id: e.id })) }),
        };
      }
      case 'metronome':
        if (events.some(refused))
          return { status: 400, body: JSON.stringify({ message: 'customer not found' }) };
        events.forEach((e) => this.hold(e));
        return { status: 200, body: '' };
      case 'stripe-v2':
        events.forEach((e) => this.hold(e));
        return { status: 200, body: '{}' };
      case 'openmeter':
        events.forEach((e) => this.hold(e));
        return { status: 204, body: '' };
      case 'cloudevents':
        events.forEach((e) => this.hold(e));
        return { status: 202, body: '' };
    }
  }
}
