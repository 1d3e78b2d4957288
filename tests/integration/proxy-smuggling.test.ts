import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { closeDatabase, ProxyHarness, rawRequest } from '../helpers/proxy-harness.js';

const START_MS = 120_000;

afterAll(closeDatabase);

/**
 * Request smuggling through Tollgate, from a raw TCP client: each attempt must be refused or reach the
 * backend as exactly one request whose body is exactly what the framing said.
 */
describe('proxy: request smuggling', () => {
  const h = new ProxyHarness();
  let auth: string;
  beforeAll(async () => {
    await h.start();
    auth = `Authorization: Bearer ${(await h.createKey()).secret}\r\n`;
  }, START_MS);
  afterAll(() => h.stop());

  const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';

  async function attempt(
    head: string,
    body: string,
  ): Promise<{ answer: string; reached: { url: string; body: string }[] }> {
    const before = h.backend.received.length;
    const answer = await rawRequest(h.port, head + body);
    // Anything that slipped through reaches the backend before a request sent once the answer is in.
    const marker = `/after-${before}`;
    expect(
      await rawRequest(h.port, `GET ${marker} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
    ).toMatch(/^HTTP\/1\.1 200 /);
    return {
      answer,
      reached: h.backend.received
        .slice(before)
        .filter((r) => r.url !== marker)
        .map((r) => ({ url: r.url, body: r.body.toString() })),
    };
  }

  it('refuses Content-Length together with Transfer-Encoding', async () => {
    const body = `0\r\n\r\n${smuggled}`;
    const { answer, reached } = await attempt(
      `POST /a HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
      body,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(reached).toEqual([]);
  });

  it('refuses duplicate, differing Content-Length headers', async () => {
    const { answer, reached } = await attempt(
      `POST /a HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 5\r\nContent-Length: 45\r\nConnection: close\r\n\r\n`,
      'hello' + smuggled,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(reached).toEqual([]);
  });

  it.each(['chunked, identity', ' chunked', 'xchunked', 'chunked\t', 'Chunked', 'chunked, chunked'])(
    'forwards at most one request, with the framed body, for Transfer-Encoding "%s"',
    async (te) => {
      const { answer, reached } = await attempt(
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: ${te}\r\n\r\n`,
        '5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(answer).toMatch(/^HTTP\/1\.1 (200|400) /);
      expect(reached.filter((r) => r.url.includes('smuggled'))).toEqual([]);
      expect(reached.length).toBeLessThanOrEqual(1);
      for (const r of reached) expect(r).toEqual({ url: '/a', body: 'hello' });
    },
  );

  it.each(['DELETE', 'OPTIONS', 'GET'])(
    'forwards a chunked %s body as exactly one request with that body',
    async (method) => {
      // What follows the last chunk is the client's next request, judged on its own: it has no key.
      const { answer, reached } = await attempt(
        `${method} /a HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\n\r\n`,
        '5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(answer).toMatch(/^HTTP\/1\.1 200 [^]*HTTP\/1\.1 401 /);
      expect(reached).toEqual([{ url: '/a', body: 'hello' }]);
    },
  );

  it('never forwards what follows a Content-Length body as part of the same request', async () => {
    const { reached } = await attempt(
      `POST /a HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 5\r\n\r\n`,
      'hello' + 'GET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    // The trailing bytes are a second request of the client's own, authenticated on its own merits.
    expect(reached[0]).toEqual({ url: '/a', body: 'hello' });
    expect(reached.slice(1).every((r) => r.url === '/smuggled' && r.body === '')).toBe(true);
  });
});
