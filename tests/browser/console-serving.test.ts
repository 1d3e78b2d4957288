/**
 * The console's files as the public listener serves them (docs/guides/console.md), over plain HTTP
 * against a built Tollgate: the page and its hashed assets with their cache headers, a strict
 * Content-Security-Policy and security headers on every answer (404s and redirects included), 404 for
 * everything the build did not produce (path traversal in every spelling), MANAGEMENT_PREFIX, and
 * CONSOLE=off.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFleet, type Fleet } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { CONSOLE_DIR, consoleAssets } from './helpers/console-build.js';
import { get, type Answer } from './helpers/raw-request.js';

let fleet: Fleet;
let tollgate: Tollgate;

beforeAll(async () => {
  fleet = await startFleet(1);
  tollgate = fleet.members[0]!;
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

function expectSecurityHeaders(answer: Answer): void {
  const csp = String(answer.headers['content-security-policy']);
  const directives = new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values]),
  );
  expect(directives.get('default-src')).toEqual(["'self'"]);
  expect(directives.get('script-src')).toEqual(["'self'"]);
  expect(directives.get('style-src')).toEqual(["'self'"]);
  expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
  expect(directives.get('object-src')).toEqual(["'none'"]);
  expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(answer.headers['referrer-policy']).toBe('no-referrer');
  expect(answer.headers['x-frame-options']).toBe('DENY');
}

const CONSOLE = '/tollgate/console';

it('serves index.html at the console root: revalidated on every load, no inline script, every asset from the origin', async () => {
  const page = await get(tollgate.url, `${CONSOLE}/`);
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(page.headers['cache-control']).toBe('no-cache');
  expectSecurityHeaders(page);
  const html = page.body.toString('utf8');
  expect(html).toBe(readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8'));
  // Scripts only by src, from this origin; no inline script, no inline style, no external URL.
  expect([...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]!.trim())).toEqual(['']);
  expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|https?:\/\//i);
  const referenced = [...html.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1]!);
  expect(referenced.sort()).toEqual(consoleAssets().sort());

  // A conditional request for the same page is answered 304 without a body.
  const again = await get(tollgate.url, `${CONSOLE}/`, { 'if-none-match': String(page.headers.etag) });
  expect(again.status).toBe(304);
  expect(again.body.length).toBe(0);
  expectSecurityHeaders(again);
});

it('serves every built asset under its hashed name, cached for a year, gzipped when asked', async () => {
  for (const asset of consoleAssets()) {
    expect(asset).toMatch(/^assets\/[a-z]+-[A-Z0-9]{8}\.(js|css|svg)$/);
    const onDisk = readFileSync(join(CONSOLE_DIR, asset));
    const plain = await get(tollgate.url, `${CONSOLE}/${asset}`);
    expect(plain.status).toBe(200);
    expect(plain.body.equals(onDisk)).toBe(true);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-type']).toMatch(/^(text\/javascript|text\/css|image\/svg\+xml)/);
    expectSecurityHeaders(plain);
    const zipped = await get(tollgate.url, `${CONSOLE}/${asset}`, { 'accept-encoding': 'gzip, br' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('accept-encoding');
    const refused = await get(tollgate.url, `${CONSOLE}/${asset}`, { 'accept-encoding': 'gzip;q=0' });
    expect(refused.headers['content-encoding']).toBeUndefined();
  }
});

it('redirects the bare console path to its folder, refuses writes, and answers HEAD like GET without a body', async () => {
  const bare = await get(tollgate.url, CONSOLE);
  expect(bare.status).toBe(308);
  expect(bare.headers.location).toBe(`${CONSOLE}/`);
  expectSecurityHeaders(bare);
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    const answer = await get(tollgate.url, `${CONSOLE}/`, {}, method);
    expect({ method, status: answer.status, allow: answer.headers.allow }).toEqual({
      method,
      status: 405,
      allow: 'GET, HEAD',
    });
    expectSecurityHeaders(answer);
  }
  const head = await get(tollgate.url, `${CONSOLE}/`, {}, 'HEAD');
  expect(head.status).toBe(200);
  expect(head.body.length).toBe(0);
  expect(Number(head.headers['content-length'])).toBe(readFileSync(join(CONSOLE_DIR, 'index.html')).length);
});

it('answers 404 for every path the build did not produce, traversal in any spelling included, never a file outside its folder', async () => {
  const attempts = [
    '/nope.js',
    '/assets/',
    '/assets/app.js',
    '/../../package.json',
    '/..%2f..%2fpackage.json',
    '/%2e%2e/%2e%2e/package.json',
    '/%2e%2e%2f%2e%2e%2fpackage.json',
    '/assets/..%2f..%2f..%2fpackage.json',
    '/....//....//package.json',
    '/..\\..\\package.json',
    '/%252e%252e/package.json',
    '//etc/passwd',
    '/../../../../../../etc/passwd',
    '/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
    '/index.html%00.js',
    '/.env',
    '/../src/config.ts',
    '/../../dist/src/main.js',
  ];
  const secretFiles = [readFileSync('package.json', 'utf8').slice(0, 40), 'root:x:0:0'];
  for (const attempt of attempts) {
    const answer = await get(tollgate.url, CONSOLE + attempt);
    expect({ attempt, status: answer.status }).toEqual({ attempt, status: 404 });
    expect(JSON.parse(answer.body.toString('utf8'))).toMatchObject({ code: 'not_found' });
    for (const text of secretFiles) expect(answer.body.toString('utf8')).not.toContain(text);
    expectSecurityHeaders(answer);
  }
});

it('leaves the management API and the proxy as they were: a path that only starts like the console is not the console', async () => {
  // No token: the management app's 401, not a console answer.
  const lookalike = await get(tollgate.url, '/tollgate/consoles');
  expect(lookalike.status).toBe(401);
  expect(lookalike.headers['content-security-policy']).toBeUndefined();
  const api = await tollgate.admin('GET', '/consumer-api-key?limit=1');
  expect(api.status).toBe(200);
});

it('lives under MANAGEMENT_PREFIX when one is set, and is gone with CONSOLE=off', async () => {
  const [prefixed, off] = await Promise.all([
    fleet.replicas.start(1, { MANAGEMENT_PREFIX: '/admin' }).then((t) => t[0]!),
    fleet.replicas.start(1, { CONSOLE: 'off' }).then((t) => t[0]!),
  ]);
  const underPrefix = await get(prefixed.url, `/admin${CONSOLE}/`);
  expect(underPrefix.status).toBe(200);
  expect(underPrefix.body.toString('utf8')).toContain('<div id="app">');
  // Without the prefix the path is an ordinary proxied one: no key, no console.
  const unprefixed = await get(prefixed.url, `${CONSOLE}/`);
  expect(unprefixed.status).toBe(401);
  expect(JSON.parse(unprefixed.body.toString('utf8')).code).toBe('missing_api_key');

  for (const path of [`${CONSOLE}/`, `${CONSOLE}/${consoleAssets()[0]}`]) {
    const answer = await get(off.url, path, { authorization: `Bearer ${off.rootToken}` });
    expect({ path, status: answer.status }).toEqual({ path, status: 404 });
    expect(answer.body.toString('utf8')).not.toContain('<div id="app">');
  }
});

it('refuses CONSOLE values other than on and off at start-up, naming the variable', async () => {
  await expect(fleet.replicas.start(1, { CONSOLE: 'yes' })).rejects.toThrow(
    /CONSOLE: must be "on" or "off", got "yes"/,
  );
});
