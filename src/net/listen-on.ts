import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on `host`:`port` (0: any free one) and resolves the port bound; rejects when it cannot. */
export function listenOn(server: Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
