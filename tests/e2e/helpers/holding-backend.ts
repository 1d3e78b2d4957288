import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '../../helpers/poll.js';
import { hitFull } from './replicas.js';
import type { Tollgate } from './tollgate.js';

/**
 * A real HTTP backend that holds every request open until the test lets it go, and counts how many
 * it holds at once: what a concurrency limit promises, as the backend sees it. A request whose client
 * (a Tollgate replica) went away stops counting when its connection closes.
 */
export interface HoldingBackend {
  readonly url: string;
  /** Requests held now. */
  readonly holding: number;
  /** The most held at once so far (since `countMostFromNow`). */
  readonly most: number;
  /** Counts `most` again from what is held now (a test's own peak). */
  countMostFromNow(): void;
  /** Requests received so far. */
  readonly received: number;
  /** Answers `n` held requests (all by default), oldest first. */
  release(n?: number): void;
  close(): Promise<void>;
}

export async function startHoldingBackend(): Promise<HoldingBackend> {
  const held: ServerResponse[] = [];
  let most = 0;
  let received = 0;
  const server = createServer((req, res) => {
    received++;
    held.push(res);
    most = Math.max(most, held.length);
    // Gone before its answer (its replica died, or gave up): no longer in flight.
    res.once('close', () => {
      const at = held.indexOf(res);
      if (at >= 0) held.splice(at, 1);
    });
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    get holding() {
      return held.length;
    },
    get most() {
      return most;
    },
    countMostFromNow() {
      most = held.length;
    },
    get received() {
      return received;
    },
    release(n = held.length) {
      for (const res of held.splice(0, n)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"done":true}');
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Waits until each of `replicas` sends `secret`'s requests under `path` to `holding` (a route reaches
 * every replica within a second): a probe through each is held there, then let go.
 */
export async function routedToHolding(
  replicas: readonly Tollgate[],
  secret: string,
  holding: HoldingBackend,
  path = '/v1/held/probe',
): Promise<void> {
  for (const replica of replicas)
    await waitFor(
      async () => {
        const before = holding.received;
        let answered = false;
        const answer = hitFull(replica, secret, path).finally(() => (answered = true));
        // Held here, or answered by wherever the route table in force sends it.
        await waitFor(
          async () => holding.received > before || answered,
          (settled) => settled,
          { what: `${path} through ${replica.url} held or answered` },
        );
        const heldHere = holding.received > before;
        holding.release();
        return heldHere && (await answer).status === 200;
      },
      (heldHere) => heldHere,
      { what: `${replica.url} routing ${path} to the holding backend` },
    );
}
