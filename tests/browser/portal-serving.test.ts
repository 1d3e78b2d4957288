/**
 * The portal's pages as the public listener serves them (docs/guides/portal.md), over plain HTTP
 * against a built Tollgate: the pages and their hashed assets with their cache headers; the pages'
 * strict Content-Security-Policy, and the reference page's own (swagger-ui's data: images, no Trusted
 * Types) with scripts and styles still from the origin only; writes refused; 404 for everything the
 * build did not produce, traversal included; the portal's other paths left to its API; and
 * MANAGEMENT_PREFIX.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFleet, type Fleet } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { PORTAL } from './helpers/portal-browser.js';
import { assetsOf, PORTAL_DIR, portalAssets } from './helpers/portal-build.js';
import { get, type Answer } from './helpers/raw-request.js';

let fleet: Fleet;
let tollgate: Tollgate;

beforeAll(async () => {
  fleet = await startFleet(1);
  tollgate = fleet.members[0]!;
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

function policyOf(answer: Answer): Map<string, string[]> {
  return new Map(
    String(answer.headers['content-security-policy'])
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values]),
  );
}

/** What every answer of the portal's pages carries, whatever the page. */
function expectStrict(answer: Answer): Map<string, string[]> {
  const policy = policyOf(answer);
  for (const directive of ['default-src', 'script-src', 'style-src', 'connect-src'])
    expect({ directive, values: policy.get(directive) }).toEqual({ directive, values: ["'self'"] });
  expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
  expect(policy.get('object-src')).toEqual(["'none'"]);
  expect(policy.get('form-action')).toEqual(["'none'"]);
  expect(String(answer.headers['content-security-policy'])).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(answer.headers['referrer-policy']).toBe('no-referrer');
  expect(answer.headers['x-frame-options']).toBe('DENY');
  return policy;
}

it('serves the portal page: Trusted Types, https logos, no inline script, only its own bundle', async () => {
  const page = await get(tollgate.url, `${PORTAL}/`);
  expect(page.status).toBe(200);
  expect(page.headers['cache-control']).toBe('no-cache');
  const policy = expectStrict(page);
  expect(policy.get('img-src')).toEqual(["'self'", 'https:']);
  expect(policy.get('require-trusted-types-for')).toEqual(["'script'"]);
  const html = page.body.toString('utf8');
  expect(html).toBe(readFileSync(join(PORTAL_DIR, 'index.html'), 'utf8'));
  expect([...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]!.trim())).toEqual(['']);
  expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|https?:\/\//i);
  expect(assetsOf('index.html').some((a) => a.startsWith('assets/reference-'))).toBe(false);
});

it('serves the reference page with its own policy: data: images and no Trusted Types, scripts and styles still the origin only', async () => {
  const page = await get(tollgate.url, `${PORTAL}/reference`);
  expect(page.status).toBe(200);
  const policy = expectStrict(page);
  expect(policy.get('img-src')).toEqual(["'self'", 'https:', 'data:']);
  expect(policy.has('require-trusted-types-for')).toBe(false);
  expect(page.body.toString('utf8')).toBe(readFileSync(join(PORTAL_DIR, 'reference.html'), 'utf8'));
});

it('serves every built asset under its hashed name, cached for a year, gzipped when asked', async () => {
  for (const asset of portalAssets()) {
    expect(asset).toMatch(/^assets\/[a-z]+-[A-Z0-9]{8}\.(js|css|svg)$/);
    const plain = await get(tollgate.url, `${PORTAL}/${asset}`);
    expect(plain.status).toBe(200);
    expect(plain.body.equals(readFileSync(join(PORTAL_DIR, asset)))).toBe(true);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expectStrict(plain);
    const zipped = await get(tollgate.url, `${PORTAL}/${asset}`, { 'accept-encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
  }
});

it('redirects the bare portal path to its folder and refuses writes to its pages', async () => {
  const bare = await get(tollgate.url, PORTAL);
  expect(bare.status).toBe(308);
  expect(bare.headers.location).toBe(`${PORTAL}/`);
  for (const path of [`${PORTAL}/`, `${PORTAL}/reference`, `${PORTAL}/${portalAssets()[0]}`]) {
    const answer = await get(tollgate.url, path, {}, 'POST');
    expect({ path, status: answer.status, allow: answer.headers.allow }).toEqual({
      path,
      status: 405,
      allow: 'GET, HEAD',
    });
  }
});

it('answers 404 for every asset the build did not produce, traversal in any spelling included', async () => {
  const secret = readFileSync('package.json', 'utf8').slice(0, 40);
  for (const attempt of [
    '/assets/',
    '/assets/portal.js',
    '/assets/../../package.json',
    '/assets/..%2f..%2fpackage.json',
    '/assets/%2e%2e/%2e%2e/package.json',
    '/assets/..\\..\\package.json',
    '/assets/index.html%00.js',
  ]) {
    const answer = await get(tollgate.url, PORTAL + attempt);
    expect({ attempt, status: answer.status }).toEqual({ attempt, status: 404 });
    expect(answer.body.toString('utf8')).not.toContain(secret);
  }
});

it("leaves the portal's other paths to its API and the management API: they are not pages", async () => {
  // The portal is off here: its API answers 404 as if it did not exist; any other path under the
  // portal is the management API's, which asks for its bearer token.
  for (const [path, status] of [
    [`${PORTAL}/api/me`, 404],
    [`${PORTAL}/index.html`, 401],
    [`${PORTAL}/keys`, 401],
  ] as const) {
    const answer = await get(tollgate.url, path);
    expect({ path, status: answer.status }).toEqual({ path, status });
    expect(answer.body.toString('utf8')).not.toContain('<div id="app">');
  }
});

it('lives under MANAGEMENT_PREFIX when one is set', async () => {
  const [prefixed] = await fleet.replicas.start(1, { MANAGEMENT_PREFIX: '/admin' });
  const page = await get(prefixed!.url, `/admin${PORTAL}/`);
  expect(page.status).toBe(200);
  expect(page.body.toString('utf8')).toContain('<div id="app">');
  const unprefixed = await get(prefixed!.url, `${PORTAL}/`);
  expect(JSON.parse(unprefixed.body.toString('utf8')).code).toBe('missing_api_key');
});
