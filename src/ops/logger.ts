import pino, { type Logger } from 'pino';
import { LogDestination } from './log-destination.js';

export type { Logger };

/** What of an error reaches a log line, its causes included. */
interface LoggedError {
  type: string;
  message: string;
  code?: string;
  stack?: string;
  cause?: LoggedError;
}

/**
 * An error as it may be logged: its type, message, code (a SQLSTATE, a socket error) and stack, never
 * its other properties. Database drivers attach the failed query's parameters (`params`, secret hashes
 * and ciphertexts among them), its text and `detail` ("Failing row contains (…)") to their errors;
 * none of them may reach a log.
 */
export function loggableError(err: unknown, depth = 0): LoggedError | string {
  if (typeof err !== 'object' || err === null) return String(err);
  const e = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown; cause?: unknown };
  const logged: LoggedError = {
    type: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : '',
  };
  if (typeof e.code === 'string') logged.code = e.code;
  if (typeof e.stack === 'string') logged.stack = e.stack;
  if (e.cause !== undefined && depth < 3) {
    const cause = loggableError(e.cause, depth + 1);
    if (typeof cause !== 'string') logged.cause = cause;
  }
  return logged;
}

/**
 * JSON lines on stdout. Credentials never reach a log line: the paths below are redacted wherever an
 * object carrying them is logged, errors are logged through `loggableError`, and the code logs key
 * ids, never secrets. Lines go to stdout through a LogDestination, which no reader of stdout can stall.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  /** Fields added to every line from its own (src/tracing: a traced request's `traceId` and `spanId`). */
  mixin?: (line: object) => object,
): Logger {
  return pino(
    {
      ...(mixin !== undefined && { mixin }),
      level,
      base: { service: 'tollgate', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: loggableError },
      redact: {
        paths: [
          'secret',
          '*.secret',
          'rootToken',
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'headers.authorization',
          'headers["x-api-key"]',
        ],
        censor: '[redacted]',
      },
    },
    destination ?? new LogDestination(),
  );
}
