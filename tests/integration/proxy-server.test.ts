import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPublicServer } from '../../src/server.js';
import { rawRequest } from '../helpers/proxy-harness.js';

/** Opens a connection, sends `first`, and reports everything received until the server closes it. */
function holdOpen(port: number, first: string): Promise<{ text: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let text = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(first));
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('close', () => resolve({ text, closedAfterMs: Date.now() - started }));
    socket.on('error', reject);
  });
}

describe('public server limits and routing', () => {
  let server: Server;
  let port: number;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createPublicServer({
      managementApp: (_req, res) => res.end('management'),
      proxy: (req, res) => {
        seen.push(`${req.method} ${req.url} upgrade=${req.headers.upgrade ?? ''}`);
        req.on('end', () => res.end('proxied'));
        req.resume();
      },
      upgrade: (_req, socket) =>
        socket.end('HTTP/1.1 418 Upgrade Seen\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'),
      managementPrefix: '/admin',
      headersTimeoutMs: 500,
      requestTimeoutMs: 1_000,
      keepAliveTimeoutMs: 3_000,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('routes by the management prefix', async () => {
    expect(
      await rawRequest(port, 'GET /admin/consumer-api-key HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ).toMatch(/management$/);
    expect(
      await rawRequest(port, 'GET /consumer-api-key HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ).toMatch(/proxied$/);
  });

  it('drops a client that sends its headers too slowly', async () => {
    const { text, closedAfterMs } = await holdOpen(port, 'GET /slow HTTP/1.1\r\nHost: x\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).toBeLessThan(3_000);
  });

  it('drops a client that sends its body too slowly', async () => {
    const { text, closedAfterMs } = await holdOpen(
      port,
      'POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc',
    );
    expect(closedAfterMs).toBeLessThan(4_000);
    expect(seen.at(-1)).toBe('POST /slow upgrade=');
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('refuses oversized headers with 431', async () => {
    const answer = await rawRequest(
      port,
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('keeps an idle keep-alive connection usable for longer than the header deadline', async () => {
    const answers = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /one HTTP/1.1\r\nHost: x\r\n\r\n'));
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        if (text.includes('proxied') && !text.includes('/two')) {
          text += '/two';
          setTimeout(() => socket.write('GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), 1_500);
        }
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answers.match(/HTTP\/1\.1 200 /g)).toHaveLength(2);
  });

  it('hands only WebSocket upgrades to the upgrade handler; other Upgrade requests are plain HTTP', async () => {
    const h2c = await rawRequest(
      port,
      'GET /h2c HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\n\r\n',
    );
    expect(h2c).toMatch(/^HTTP\/1\.1 200 /);
    expect(seen.at(-1)).toBe('GET /h2c upgrade=h2c');
    const ws = await rawRequest(
      port,
      'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    );
    expect(ws).toMatch(/^HTTP\/1\.1 418 /);
  });
});
