/**
 * A call's `grpc-timeout` (src/extauth/grpc-unary.ts): up to eight digits of hours or minutes are
 * valid, most of them past what a timer can hold; such a deadline never passes while a call is
 * decided, and is no reason to end it at once.
 */
import { connect, createServer, type Http2Server } from 'node:http2';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { deadlineMs, serveUnary, type UnaryMethod } from '../../src/extauth/grpc-unary.js';
import { MessageBudget } from '../../src/extauth/message-budget.js';

let server: Http2Server;
let port: number;
const warnings: string[] = [];
const onWarning = (warning: Error) => warnings.push(warning.name);

/** Answers an empty response once a turn of timers has passed: a call decided slower than at once. */
const slow: UnaryMethod<Buffer> = {
  decode: (message) => message,
  answer: () => new Promise((resolve) => setTimeout(() => resolve(new Uint8Array()), 20)),
};

beforeAll(async () => {
  const bounds = { budget: new MessageBudget(1024 * 1024), arrivalMs: 10_000 };
  server = createServer();
  server.on('stream', (stream, headers) =>
    serveUnary(stream, headers, slow, () => ({ code: 13, details: 'failed' }), bounds),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  process.on('warning', onWarning);
});
afterAll(async () => {
  process.off('warning', onWarning);
  await new Promise((resolve) => server.close(resolve));
});

/** The grpc-status of an empty call with `timeout`. */
async function statusWith(timeout: string): Promise<number> {
  const session = connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/a.B/C',
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': timeout,
      });
      let status: number | undefined;
      stream.on(
        'response',
        (h) => (status = h['grpc-status'] === undefined ? status : Number(h['grpc-status'])),
      );
      stream.on('trailers', (t) => (status = Number(t['grpc-status'])));
      stream.on('error', reject);
      stream.on('close', () => resolve(status ?? -1));
      stream.resume();
      stream.end(Buffer.alloc(5));
    });
  } finally {
    session.close();
  }
}

it('answers a call whose grpc-timeout is past what a timer holds (1000H, 99999999M), without a warning', async () => {
  expect(await statusWith('1000H')).toBe(0);
  expect(await statusWith('99999999M')).toBe(0);
  expect(await statusWith('100S')).toBe(0);
  expect(warnings).not.toContain('TimeoutOverflowWarning');
});

it('reads grpc-timeout in its units; one past a timer is none, one it cannot read is null', () => {
  expect([deadlineMs('100S'), deadlineMs('5m'), deadlineMs('2H'), deadlineMs(undefined)]).toEqual([
    100_000,
    5,
    7_200_000,
    undefined,
  ]);
  expect([deadlineMs('1000H'), deadlineMs('99999999M')]).toEqual([undefined, undefined]);
  expect([deadlineMs('soon'), deadlineMs('123456789S')]).toEqual([null, null]);
});
