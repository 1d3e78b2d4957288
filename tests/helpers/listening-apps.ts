/**
 * An Express app and a Fastify instance, each listening on a free loopback port: the two frameworks
 * @tollgate/client's middleware serves, as the client tests run them.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { FastifyInstance } from 'fastify';

export interface ListeningApps {
  readonly expressUrl: string;
  readonly fastifyUrl: string;
  close(): Promise<void>;
}

export async function listeningApps(app: Express, fastify: FastifyInstance): Promise<ListeningApps> {
  const expressServer = createServer(app);
  await new Promise<void>((resolve) => expressServer.listen(0, '127.0.0.1', resolve));
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  return {
    expressUrl: `http://127.0.0.1:${(expressServer.address() as AddressInfo).port}`,
    fastifyUrl: `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`,
    async close() {
      await fastify.close();
      await new Promise((resolve) => expressServer.close(resolve));
    },
  };
}
