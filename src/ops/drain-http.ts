import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { settledWithin } from './deadline.js';

/**
 * While draining, how long a connection stays open without a request once its answer has left: a
 * client that sends its next request on it meanwhile is answered (with `Connection: close`), one that
 * has gone to another replica no longer holds the drain open.
 */
export const DRAIN_IDLE_MS = 1_000;

const closeAfterAnswer = (_req: IncomingMessage, res: ServerResponse): void => {
  res.shouldKeepAlive = false;
};

/**
 * SIGTERM on an HTTP listener: no new connections, requests in flight finish within `timeoutMs`, then
 * whatever is left is cut. Resolves whether everything finished in time.
 *
 * Node's `close()` closes the connections idle at that moment, and no other: a request in flight was
 * answered with keep-alive and its connection would then sit idle until `keepAliveTimeout`, long past
 * any drain deadline, whenever its client does not send another request on it.
 */
export async function drainHttpServer(server: Server, timeoutMs: number): Promise<boolean> {
  // A keep-alive client would go on sending on its connection until the deadline cut it: every
  // answer from now on says `Connection: close`, so clients go to another replica.
  server.prependListener('request', closeAfterAnswer);
  // Read by Node as each answer in flight ends: its connection closes once idle this long.
  server.keepAliveTimeout = DRAIN_IDLE_MS;
  server.keepAliveTimeoutBuffer = 0;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const drained = await settledWithin(closed, timeoutMs);
  if (!drained) server.closeAllConnections();
  return drained;
}
