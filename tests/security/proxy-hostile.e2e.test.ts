/**
 * Hostile clients against the BUILT server (dist/src/main.js as a child process), from raw TCP where
 * no HTTP client would send such bytes, in front of a backend that records every request that
 * arrives. Counted for the report: smuggling attempts, smuggled requests that reached the backend
 * (must be 0), requests that escaped UPSTREAM_URL's path prefix (0), crashes (0).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { posix } from 'node:path';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from '../e2e/helpers/tollgate.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';

interface Arrival {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  body: string;
}

/** Records each request the moment its head arrives, so even one that never finishes is counted. */
class RecordingBackend {
  readonly arrivals: Arrival[] = [];
  private readonly server: Server = createServer((req, res) => {
    const arrival: Arrival = { method: req.method!, url: req.url!, headers: req.headers, body: '' };
    this.arrivals.push(arrival);
    req.setEncoding('latin1');
    req.on('data', (c: string) => (arrival.body += c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ backend: true, url: req.url }));
    });
  });
  port = 0;

  async start(): Promise<void> {
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Writes bytes as they are; resolves everything answered once the server closes or `waitMs` passes. */
function raw(port: number, bytes: string, waitMs = 4_000): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes, 'latin1'));
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', finish);
    socket.on('error', finish);
  });
}

const statusLines = (answer: string): number[] =>
  [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

const PREFIX = '/base';
const figures = {
  smugglingAttempts: 0,
  smuggledReachedBackend: 0,
  extraRequestsForwarded: 0,
  dotSegmentAttempts: 0,
  escapedPrefix: 0,
  managementWithoutRootToken: 0,
  bruteForceGuesses: 0,
  guessesThatQueriedDbAfterThrottle: 0,
  slowLorisConnections: 0,
  slowLorisLongestOpenMs: 0,
  crashes: 0,
};

/** What each smuggling attempt got: refused (status) or forwarded once. */
const outcomes: Record<string, string> = {};
const backend = new RecordingBackend();
let t: Tollgate;
const clock = new TestClock();
let secret: string;
let port: number;

/** Slow-loris connections opened at start-up; they run while the other tests use the server. */
const loris: Promise<{ closedAfterMs: number; answer: string }>[] = [];
const HEADERS_TIMEOUT_MS = 15_000;

beforeAll(async () => {
  await backend.start();
  t = await startTollgate({
    UPSTREAM_URL: `http://127.0.0.1:${backend.port}${PREFIX}`,
    // One load balancer in front: it appends the real client address to X-Forwarded-For.
    TRUST_PROXY: '1',
    ...clock.env,
  });
  t.process.on('exit', (code, signal) => {
    if (!stopping) {
      figures.crashes++;
      console.log(`tollgate exited unexpectedly: code ${code}, signal ${signal}`);
    }
  });
  port = Number(new URL(t.url).port);
  const created = await t.admin('POST', '/consumer-api-key/create', { name: 'hostile' });
  expect(created.status).toBe(201);
  secret = created.body.secret;

  // Slow loris: a header line every 2 s, never the blank line that ends the head.
  for (let i = 0; i < 10; i++) {
    figures.slowLorisConnections++;
    loris.push(
      new Promise((resolve) => {
        const opened = Date.now();
        const chunks: Buffer[] = [];
        const socket = connect(port, '127.0.0.1', () =>
          socket.write(`GET /loris HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\n`),
        );
        const drip = setInterval(() => socket.write(`X-Drip-${Date.now()}: y\r\n`), 2_000);
        const stopAt = setTimeout(() => socket.destroy(), HEADERS_TIMEOUT_MS + 20_000);
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('error', () => undefined);
        socket.on('close', () => {
          clearInterval(drip);
          clearTimeout(stopAt);
          resolve({ closedAfterMs: Date.now() - opened, answer: Buffer.concat(chunks).toString('latin1') });
        });
      }),
    );
  }
}, 120_000);

let stopping = false;
afterAll(async () => {
  stopping = true;
  const code = await t?.stop();
  await backend.close();
  console.log(`proxy hostile figures: ${JSON.stringify({ ...figures, exitCodeAfterSigterm: code })}`);
  const lines = Object.entries(outcomes).map(([attempt, outcome]) => `  ${attempt}: ${outcome}`);
  console.log(`smuggling outcomes:\n${lines.join('\n')}`);
  expect(code).toBe(0);
  expectNoSecretsLogged();
}, 60_000);

describe('request smuggling from a raw TCP client, through the built server', () => {
  /** Carries no credential: if it ever reaches the backend, it went past authentication. */
  const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
  const chunkedThenSmuggled = '5\r\nhello\r\n0\r\n\r\n' + smuggled;
  const auth = () => `Authorization: Bearer ${secret}\r\n`;

  /**
   * What reached the backend since `before`, read once a request sent after the answer has reached
   * it: anything that slipped through came first.
   */
  async function reachedSince(before: number): Promise<Arrival[]> {
    const marker = `/after-${before}`;
    const answer = await raw(port, `GET ${marker} HTTP/1.1\r\nHost: x\r\n${auth()}Connection: close\r\n\r\n`);
    expect(statusLines(answer)).toEqual([200]);
    return backend.arrivals.slice(before).filter((a) => !a.url.endsWith(marker));
  }

  const attempts: [string, () => string][] = [
    [
      'CL then TE',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: ${chunkedThenSmuggled.length}\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedThenSmuggled}`,
    ],
    [
      'TE then CL',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${chunkedThenSmuggled}`,
    ],
    [
      'CL.TE with the smuggled request in the chunked body',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
    ],
    [
      'duplicate differing Content-Length',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 5\r\nContent-Length: ${5 + smuggled.length}\r\n\r\nhello${smuggled}`,
    ],
    [
      'duplicate equal Content-Length',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello${smuggled}`,
    ],
    [
      'Content-Length list',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 5, ${5 + smuggled.length}\r\n\r\nhello${smuggled}`,
    ],
    [
      'Content-Length +5',
      () => `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: +5\r\n\r\nhello${smuggled}`,
    ],
    [
      'Content-Length 0x5',
      () => `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 0x5\r\n\r\nhello${smuggled}`,
    ],
    ...[
      'xchunked',
      ' chunked',
      'chunked, identity',
      'identity, chunked',
      'chunked\t',
      'Chunked',
      'chunked, chunked',
      'chunked;x=y',
      '\x0bchunked',
      'chunke',
      'gzip, chunked',
    ].map((te): [string, () => string] => [
      `Transfer-Encoding ${JSON.stringify(te)}`,
      () => `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: ${te}\r\n\r\n${chunkedThenSmuggled}`,
    ]),
    [
      'two Transfer-Encoding headers',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n${chunkedThenSmuggled}`,
    ],
    [
      'Transfer-Encoding folded (obs-fold)',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding:\r\n chunked\r\n\r\n${chunkedThenSmuggled}`,
    ],
    [
      'space before the colon',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding : chunked\r\n\r\n${chunkedThenSmuggled}`,
    ],
    [
      'bare LF line endings in the chunks',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n${smuggled}`,
    ],
    [
      'chunk extension with a smuggled CRLF',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\n5;a="x\r\n0\r\n\r\n${smuggled}"\r\nhello\r\n0\r\n\r\n`,
    ],
    [
      'chunk size overflow',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\nfffffffffffffffff5\r\nhello\r\n0\r\n\r\n${smuggled}`,
    ],
    [
      'negative chunk size',
      () =>
        `POST /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n${smuggled}`,
    ],
    ...['DELETE', 'OPTIONS', 'GET', 'HEAD'].map((method): [string, () => string] => [
      `chunked body on ${method}`,
      () =>
        `${method} /a HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\n${chunkedThenSmuggled}`,
    ]),
    [
      'Content-Length body on DELETE',
      () => `DELETE /a HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 5\r\n\r\nhello${smuggled}`,
    ],
    [
      'HTTP/1.0 with Transfer-Encoding',
      () =>
        `POST /a HTTP/1.0\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\n${chunkedThenSmuggled}`,
    ],
    [
      'bare LF in the request head',
      () => `POST /a HTTP/1.1\nHost: x\n${auth().trim()}\nContent-Length: 5\n\nhello${smuggled}`,
    ],
  ];

  it.each(attempts)(
    '%s: refused, or forwarded as exactly one request with its framed body',
    async (label, build) => {
      figures.smugglingAttempts++;
      const before = backend.arrivals.length;
      const answer = await raw(port, build());
      const reached = await reachedSince(before);
      const smuggledHere = reached.filter((a) => a.url.includes('smuggled')).length;
      figures.smuggledReachedBackend += smuggledHere;
      figures.extraRequestsForwarded += Math.max(0, reached.length - 1);
      const answered = statusLines(answer).join('+') || '(closed)';
      outcomes[label] = reached.length === 0 ? `refused ${answered}` : `forwarded once, answered ${answered}`;
      expect(smuggledHere).toBe(0);
      expect(reached.length).toBeLessThanOrEqual(1);
      for (const a of reached) {
        expect(a.url).toBe(`${PREFIX}/a`);
        expect(['', 'hello']).toContain(a.body);
      }
      // Every answer on the connection is a refusal or the one forwarded request: no 5xx.
      const statuses = statusLines(answer);
      expect(statuses.every((s) => s < 500)).toBe(true);
      if (reached.length === 0) expect(statuses.every((s) => s === 400 || s === 401)).toBe(true);
    },
  );

  it('a pipelined second request is judged on its own: without a key it gets 401 and never reaches the backend', async () => {
    figures.smugglingAttempts++;
    const before = backend.arrivals.length;
    const answer = await raw(port, `GET /a HTTP/1.1\r\nHost: x\r\n${auth()}\r\n${smuggled}`);
    const reached = await reachedSince(before);
    figures.smuggledReachedBackend += reached.filter((a) => a.url.includes('smuggled')).length;
    expect(statusLines(answer)).toEqual([200, 401]);
    expect(reached.map((a) => a.url)).toEqual([`${PREFIX}/a`]);
  });
});

describe('request targets', () => {
  const hostPort = () => `127.0.0.1:${port}`;

  it('an absolute-form target naming another host is refused; naming our host it goes to UPSTREAM_URL only', async () => {
    const before = backend.arrivals.length;
    const other = await raw(
      port,
      `GET http://evil.example/x HTTP/1.1\r\nHost: ${hostPort()}\r\nAuthorization: Bearer ${secret}\r\nConnection: close\r\n\r\n`,
    );
    expect(other).toMatch(/^HTTP\/1\.1 400 [^]*invalid_request_target/);
    const userinfo = await raw(
      port,
      `GET http://${hostPort()}@evil.example/x HTTP/1.1\r\nHost: ${hostPort()}\r\nAuthorization: Bearer ${secret}\r\nConnection: close\r\n\r\n`,
    );
    expect(userinfo).toMatch(/^HTTP\/1\.1 400 /);
    expect(backend.arrivals.length).toBe(before);

    // The client names evil.example in both places: still our backend, under the prefix.
    const both = await raw(
      port,
      `GET http://evil.example/x?q=1 HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer ${secret}\r\nConnection: close\r\n\r\n`,
    );
    expect(both).toMatch(/^HTTP\/1\.1 200 /);
    const protocolRelative = await raw(
      port,
      `GET //evil.example/y HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nConnection: close\r\n\r\n`,
    );
    expect(statusLines(protocolRelative)[0]).toBeLessThan(500);
    expect(backend.arrivals.slice(before).map((a) => [a.url, a.headers.host])).toEqual([
      [`${PREFIX}/x?q=1`, `127.0.0.1:${backend.port}`],
      ...(statusLines(protocolRelative)[0] === 200
        ? [[`${PREFIX}//evil.example/y`, `127.0.0.1:${backend.port}`]]
        : []),
    ]);
  });

  it.each([
    ['CONNECT', `CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n`],
    ['asterisk form', `OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`],
    ['authority form on GET', `GET evil.example:80 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`],
    [
      'an absolute management URL without the root token',
      `GET http://evil.example/consumer-api-key HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`,
    ],
  ])('%s: refused without reaching the backend', async (_label, bytes) => {
    const before = backend.arrivals.length;
    const answer = await raw(port, bytes);
    expect(statusLines(answer).every((s) => s >= 400 && s < 500)).toBe(true);
    expect(answer).not.toContain('apiKeys');
    expect(backend.arrivals.length).toBe(before);
  });

  /** The path a backend that decodes (repeatedly) and resolves dot segments would serve. */
  function resolvedByBackend(url: string): string {
    let path = url.split('?')[0]!;
    for (let i = 0; i < 3; i++) {
      try {
        path = decodeURIComponent(path);
      } catch {
        break;
      }
    }
    return posix.normalize(path.replace(/\\/g, '/').replace(/;[^/]*/g, ''));
  }

  const dotPaths = [
    '/%2e%2e/consumer-api-key',
    '/%2E%2E/consumer-api-key/create',
    '/x/..%2fconsumer-api-key',
    '/x/..%2F..%2Fconsumer-api-key',
    '/..%2f..%2fetc/passwd',
    '/%2e%2e%2f%2e%2e%2fadmin',
    '/a/%252e%252e/%252e%252e/b',
    '/a/..;/..;/b',
    '/a/.%2e/.%2e/b',
    '/a/%2e./%2e./b',
    '/a/..%5c..%5cb',
    '/a\\..\\..\\b',
    '/..',
    '/../',
    '/./consumer-api-key',
    '/consumer-api-key/%2e%2e',
    '/consumer-api-key/..%2fcreate',
    '/consumer-api-key/create/..',
    '/rate-limit/create/%2e%2e/%2e%2e/consumer-api-key',
    '/%2e%2e/%2e%2e/%2e%2e/',
  ];

  it.each(dotPaths)(
    '%s: never management data without the root token, never outside the upstream prefix',
    async (path) => {
      for (const credential of ['', `Authorization: Bearer ${secret}\r\n`, `x-api-key: ${secret}\r\n`]) {
        figures.dotSegmentAttempts++;
        const before = backend.arrivals.length;
        const answer = await raw(
          port,
          `GET ${path} HTTP/1.1\r\nHost: x\r\n${credential}Connection: close\r\n\r\n`,
        );
        await new Promise((r) => setTimeout(r, 30));
        const [status] = statusLines(answer);
        if (/apiKeys|"secret"|consumerApiKeyId/.test(answer)) figures.managementWithoutRootToken++;
        expect(answer).not.toMatch(/apiKeys|"secret"|consumerApiKeyId/);
        expect(status).toBeGreaterThanOrEqual(400);
        expect(status).toBeLessThan(500);
        for (const a of backend.arrivals.slice(before)) {
          const served = resolvedByBackend(a.url);
          if (!(served === PREFIX || served.startsWith(PREFIX + '/'))) figures.escapedPrefix++;
          expect(served.startsWith(PREFIX)).toBe(true);
        }
      }
    },
  );
});

describe('header limits', () => {
  it('refuses a head over 16 KiB with 431 and many small headers without a 5xx', async () => {
    const big = await raw(
      port,
      `GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(big).toMatch(/^HTTP\/1\.1 431 /);
    const many = Array.from({ length: 3_000 }, (_, i) => `X-${i}: 1\r\n`).join('');
    const answer = await raw(
      port,
      `GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\n${many}Connection: close\r\n\r\n`,
    );
    expect(statusLines(answer)[0]).toBeLessThan(500);
  });
});

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${t.opsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** A well-formed secret nobody was given: it would reach the database if nothing stopped it. */
const guess = () => 'tg_' + randomBytes(32).toString('base64url');

/**
 * As the trusted load balancer (TRUST_PROXY=1) would: the client's own X-Forwarded-For, if any,
 * with the real address it saw appended last.
 */
function viaBalancer(realAddress: string, key: string, spoofed?: string): Promise<Response> {
  return fetch(`${t.url}/guess`, {
    headers: {
      authorization: `Bearer ${key}`,
      'x-forwarded-for': spoofed === undefined ? realAddress : `${spoofed}, ${realAddress}`,
    },
  });
}

describe('brute force of keys from one address, with X-Forwarded-For spoofing behind TRUST_PROXY=1', () => {
  it('after 100 failures the address gets 429 with Retry-After, and guesses stop reaching the database', async () => {
    // The throttle counts in minute windows: the whole test (a few seconds) in one.
    clock.after(MINUTE_MS, 100);
    const attacker = '203.0.113.7';
    // The valid key, used once from the attacker's address: now cached.
    expect((await viaBalancer(attacker, secret)).status).toBe(200);

    const missesBefore = await metric('tollgate_key_cache_requests_total', 'result="miss"');
    const failuresBefore = await metric('tollgate_auth_failures_total', 'reason="invalid"');
    const statuses: number[] = [];
    for (let i = 0; i < 100; i += 10) {
      // A fresh spoofed "client address" on every guess: the throttle must not believe it.
      const batch = await Promise.all(
        Array.from({ length: 10 }, () =>
          viaBalancer(attacker, guess(), `10.${i}.${Math.floor(Math.random() * 250)}.1`),
        ),
      );
      for (const res of batch) {
        statuses.push(res.status);
        await res.text();
      }
    }
    figures.bruteForceGuesses += 100;
    expect(statuses.filter((s) => s === 401).length).toBe(100);
    expect((await metric('tollgate_key_cache_requests_total', 'result="miss"')) - missesBefore).toBe(100);
    expect((await metric('tollgate_auth_failures_total', 'reason="invalid"')) - failuresBefore).toBe(100);

    const missesAtThrottle = await metric('tollgate_key_cache_requests_total', 'result="miss"');
    const throttledBefore = await metric('tollgate_proxy_requests_total', 'outcome="throttled"');
    for (let i = 0; i < 50; i++) {
      figures.bruteForceGuesses++;
      const res = await viaBalancer(attacker, guess(), `192.0.2.${i}`);
      const body = (await res.json()) as { code: string };
      expect(res.status).toBe(429);
      expect(body.code).toBe('too_many_failed_attempts');
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    const queried = (await metric('tollgate_key_cache_requests_total', 'result="miss"')) - missesAtThrottle;
    figures.guessesThatQueriedDbAfterThrottle += queried;
    expect(queried).toBe(0);
    expect((await metric('tollgate_proxy_requests_total', 'outcome="throttled"')) - throttledBefore).toBe(50);

    // The key already in memory keeps working from the throttled address (a shared NAT's other users).
    const valid = await viaBalancer(attacker, secret, '10.0.0.1');
    expect(valid.status).toBe(200);
    // Another real address is not throttled: its wrong guess is an ordinary 401.
    expect((await viaBalancer('198.51.100.9', guess(), attacker)).status).toBe(401);
  });

  it('the backend sees the address the balancer vouched for, never the spoofed entries beyond it', async () => {
    const before = backend.arrivals.length;
    expect((await viaBalancer('198.51.100.20', secret, '6.6.6.6, 7.7.7.7')).status).toBe(200);
    const [arrival] = backend.arrivals.slice(before);
    expect(arrival?.headers['x-forwarded-for']).toBe('198.51.100.20, 127.0.0.1');
  });
});

describe('slow clients and the process', () => {
  it('slow-loris connections are closed within the headers deadline while the server keeps serving', async () => {
    // The server answered everything above while the slow-loris connections were open.
    const ok = await fetch(`${t.url}/still-up`, { headers: { authorization: `Bearer ${secret}` } });
    expect(ok.status).toBe(200);
    const results = await Promise.all(loris);
    figures.slowLorisLongestOpenMs = Math.max(...results.map((r) => r.closedAfterMs));
    for (const r of results) {
      // Deadline checks run every second; a loaded machine adds a little.
      expect(r.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 5_000);
      if (r.answer !== '') expect(r.answer).toMatch(/^HTTP\/1\.1 408 /);
    }
    expect(backend.arrivals.some((a) => a.url.includes('loris'))).toBe(false);
  }, 60_000);

  it('the process never exited and still answers /healthz', async () => {
    expect(figures.crashes).toBe(0);
    expect(t.process.exitCode).toBeNull();
    expect((await fetch(`${t.opsUrl}/healthz`)).status).toBe(200);
  });
});
