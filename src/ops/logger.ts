import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON lines on stdout. Credentials never reach a log line: the paths below are redacted wherever an
 * object carrying them is logged, and the code logs key ids, never secrets.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'tollgate', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
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
    destination ?? pino.destination({ sync: false }),
  );
}
