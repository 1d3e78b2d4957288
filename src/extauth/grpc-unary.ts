/**
 * One unary gRPC call on an HTTP/2 stream, as gRPC over HTTP/2 frames it (PROTOCOL-HTTP2.md of the
 * grpc/grpc repository): the request's one length-prefixed message (uncompressed, gzip or deflate),
 * an answer of one message with `grpc-status` 0 in trailers, or a failure as a trailers-only response.
 * `grpc-timeout` bounds the call; a call the client cancelled is not answered. A call whose message
 * does not arrive in time, or past what its connection and the listener may hold, is refused
 * (docs/decisions/0247-grpc-calls-bounded.md).
 */
import {
  constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { gunzipSync, inflateSync } from 'node:zlib';
import type { MessageBudget } from './message-budget.js';

/** google/rpc/code.proto's codes used here. */
export const GrpcCode = {
  CANCELLED: 1,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
} as const;

export interface GrpcStatus {
  readonly code: number;
  readonly details: string;
}

export interface UnaryMethod<Req> {
  readonly decode: (message: Buffer) => Req;
  /**
   * The response, encoded; a rejection is answered with `statusOf`'s status. `gone()`: the call will
   * not be answered (its client cancelled it, or its deadline passed).
   */
  readonly answer: (request: Req, gone: () => boolean) => Promise<Uint8Array>;
}

/** As grpc-js receives by default. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

const RESPONSE_HEADERS: OutgoingHttpHeaders = {
  ':status': 200,
  'content-type': 'application/grpc',
  'grpc-accept-encoding': 'identity,deflate,gzip',
};
const OK_TRAILERS: OutgoingHttpHeaders = { 'grpc-status': '0' };
// Envoy and gRPC clients read no Date header: formatting one per call is work for nobody.
const ANSWER = { waitForTrailers: true, sendDate: false } as const;
const TRAILERS_ONLY = { endStream: true, sendDate: false } as const;

function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** A client's reset of its call, or a stream torn down with its connection: nothing is left to answer. */
export function ignoreStreamError(): void {}

/** Answers the call with `code` and no message, unless the client is gone; a client still sending is stopped. */
export function refuse(stream: ServerHttp2Stream, code: number, details: string): void {
  if (stream.destroyed || stream.closed) return;
  const headers = { ...RESPONSE_HEADERS, 'grpc-status': String(code), 'grpc-message': encodeURI(details) };
  stream.respond(headers, TRAILERS_ONLY);
  // What it would still send is no longer read, nor its stream kept.
  if (!stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
}

const UNITS_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 1e-6,
};

/** The bounds on a call whose message has not all arrived. */
export interface CallBounds {
  /** The bytes its connection and the listener may hold for unfinished messages. */
  readonly budget: MessageBudget;
  /** How long its message may take to arrive whole. */
  readonly arrivalMs: number;
}

/**
 * What a call holds before any byte of its message: its stream's state in Node and nghttp2, taken
 * from the budget so that streams opened and left empty are bounded too.
 */
export const STREAM_BYTES = 8 * 1024;

/** setTimeout's longest delay: a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The call's deadline in milliseconds from `grpc-timeout` (PROTOCOL-HTTP2.md's `TimeoutValue
 * TimeoutUnit`); undefined for none, or one no timer can hold (such a deadline never passes here);
 * null when it cannot be read.
 */
export function deadlineMs(timeout: string | string[] | undefined): number | undefined | null {
  if (timeout === undefined) return undefined;
  const match = /^(\d{1,8})([HMSmun])$/.exec(String(timeout));
  if (match === null) return null;
  const ms = Number(match[1]) * UNITS_MS[match[2]!]!;
  return ms > MAX_TIMER_MS ? undefined : ms;
}

/**
 * Serves the call: its message read whole (within `bounds`), decoded and answered by `method`, which
 * is told whether the client is gone (its deadline passed, it cancelled) by the time it decides.
 */
export function serveUnary<Req>(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  method: UnaryMethod<Req>,
  statusOf: (err: unknown) => GrpcStatus,
  bounds: CallBounds,
): void {
  if (!bounds.budget.take(STREAM_BYTES))
    return refuse(stream, GrpcCode.RESOURCE_EXHAUSTED, TOO_MANY_UNFINISHED);
  let settled = false;
  let timer: NodeJS.Timeout | undefined;
  let held = STREAM_BYTES;
  const chunks: Buffer[] = [];
  const ms = deadlineMs(headers['grpc-timeout']);
  // A call's own deadline within the bound (Envoy always sends one) bounds its arrival as well.
  const arrival =
    typeof ms === 'number' && ms <= bounds.arrivalMs
      ? undefined
      : setTimeout(() => fail(GrpcCode.DEADLINE_EXCEEDED, NOT_ARRIVED), bounds.arrivalMs);
  // What the call holds of the budget goes back once its message is whole, or it ends.
  const letGo = () => {
    clearTimeout(arrival);
    bounds.budget.give(held);
    held = 0;
    chunks.length = 0;
  };
  const fail = (code: number, details: string) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    letGo();
    refuse(stream, code, details);
  };
  stream.once('close', letGo);
  if (ms === null) return fail(GrpcCode.INTERNAL, `Invalid grpc-timeout value "${headers['grpc-timeout']}"`);
  if (ms !== undefined) timer = setTimeout(fail, ms, GrpcCode.DEADLINE_EXCEEDED, 'Deadline exceeded');
  let size = 0;
  stream.on('data', (chunk: Buffer) => {
    if (settled) return;
    size += chunk.length;
    if (size > MAX_MESSAGE_BYTES + 5)
      return fail(
        GrpcCode.RESOURCE_EXHAUSTED,
        `Received message larger than max (${size - 5} vs. ${MAX_MESSAGE_BYTES})`,
      );
    if (!bounds.budget.take(chunk.length)) return fail(GrpcCode.RESOURCE_EXHAUSTED, TOO_MANY_UNFINISHED);
    held += chunk.length;
    chunks.push(chunk);
  });
  const gone = () => settled || stream.destroyed || stream.closed;
  stream.on('end', () => {
    if (settled) return;
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    letGo();
    let request: Req;
    try {
      const message = messageOf(body, headers['grpc-encoding']);
      if (!Buffer.isBuffer(message)) return fail(message.code, message.details);
      request = method.decode(message);
    } catch (err) {
      return fail(GrpcCode.INTERNAL, `Error deserializing request: ${(err as Error).message}`);
    }
    method.answer(request, gone).then(
      (response) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (stream.destroyed || stream.closed) return;
        const frame = Buffer.allocUnsafe(5 + response.length);
        frame[0] = 0;
        frame.writeUInt32BE(response.length, 1);
        frame.set(response, 5);
        stream.respond(RESPONSE_HEADERS, ANSWER);
        stream.once('wantTrailers', sendOkTrailers);
        stream.end(frame);
      },
      (err: unknown) => {
        const status = statusOf(err);
        fail(status.code, status.details);
      },
    );
  });
}

const TOO_MANY_UNFINISHED = 'Server holds too many unfinished request messages';
const NOT_ARRIVED = 'Request message not received in time';

/** The body's one message, decompressed; or why there is not exactly one. */
function messageOf(body: Buffer, encoding: string | string[] | undefined): Buffer | GrpcStatus {
  if (body.length < 5 || body.length < 5 + body.readUInt32BE(1))
    return { code: GrpcCode.UNIMPLEMENTED, details: 'Received no request message' };
  const end = 5 + body.readUInt32BE(1);
  if (end < body.length)
    return { code: GrpcCode.UNIMPLEMENTED, details: 'Received a second request message' };
  const message = body.subarray(5, end);
  if (body[0] === 0 || encoding === undefined || encoding === 'identity') return message;
  const options = { maxOutputLength: MAX_MESSAGE_BYTES };
  try {
    if (encoding === 'gzip') return gunzipSync(message, options);
    if (encoding === 'deflate') return inflateSync(message, options);
  } catch (err) {
    if (err instanceof RangeError)
      return {
        code: GrpcCode.RESOURCE_EXHAUSTED,
        details: `Received message that decompresses to a size larger than ${MAX_MESSAGE_BYTES}`,
      };
    return { code: GrpcCode.INTERNAL, details: 'Failed to decompress message' };
  }
  return {
    code: GrpcCode.UNIMPLEMENTED,
    details: `Received message compressed with unsupported encoding "${String(encoding)}"`,
  };
}
