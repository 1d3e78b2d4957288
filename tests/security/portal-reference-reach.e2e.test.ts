/**
 * Contract section 32, "The portal's API reference URL is not a way into the network", through the
 * built server: `apiReference.url` is https, and names only public addresses in any spelling (400 at
 * save); a redirect or a name that leads elsewhere at fetch time gets one plain "could not fetch", the
 * same for an open port as for a closed one, and reaches nothing; the two switches allow http and
 * private addresses by name.
 *
 * A public target without the internet: the machine's own address outside every refused block (here a
 * documentation address, 192.0.2.2 on eth0), found among its interfaces; the test fails if there is none.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { isPublicAddress } from '../../src/net/public-address.js';
import { startTollgate, type Tollgate } from '../e2e/helpers/tollgate.js';

const DOCUMENT = { openapi: '3.1.0', info: { title: 'Globex API', version: '1' }, paths: {} };
const SETTINGS = '/tollgate/portal/settings';
const NOT_FETCHED = 'could not fetch the document';

const publicAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal && isPublicAddress(a.address))?.address;

/** A server on `host`: the document at /openapi.json, a redirect to `?to=` at /redirect; counts requests. */
async function site(host: string): Promise<{ server: Server; url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    const url = new URL(req.url!, 'http://site');
    if (url.pathname === '/openapi.json')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(DOCUMENT));
    if (url.pathname === '/redirect')
      return void res.writeHead(302, { location: url.searchParams.get('to')! }).end();
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    server,
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
  };
}

const running: Tollgate[] = [];
const servers: Server[] = [];

afterAll(async () => {
  await Promise.all(running.map((t) => t.stop()));
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

async function tollgate(env: Record<string, string> = {}): Promise<Tollgate> {
  const t = await startTollgate({ UPSTREAM_URL: 'http://127.0.0.1:9', ...env });
  running.push(t);
  return t;
}

it('this machine has an address outside every refused block, to stand for a public site', () => {
  expect(publicAddress).toBeDefined();
});

describe('at save', () => {
  let t: Tollgate;
  beforeAll(async () => {
    t = await tollgate();
  }, 60_000);

  it.each([
    'http://reference.example.com/openapi.json',
    'https://127.0.0.1/openapi.json',
    'https://127.1/openapi.json',
    'https://0x7f000001/openapi.json',
    'https://2130706433/openapi.json',
    'https://0177.0.0.1/openapi.json',
    'https://017700000001/openapi.json',
    'https://[::ffff:127.0.0.1]/openapi.json',
    'https://[0:0:0:0:0:ffff:7f00:1]/openapi.json',
    'https://[::1]:9090/openapi.json',
    'https://localhost:9090/openapi.json',
    'https://0.0.0.0/openapi.json',
    'https://0/openapi.json',
    'https://[::]/openapi.json',
    'https://10.1.2.3/openapi.json',
    'https://172.16.0.1/openapi.json',
    'https://192.168.1.1/openapi.json',
    'https://100.64.0.1/openapi.json',
    'https://169.254.169.254/latest/meta-data',
    'https://[fe80::1]/openapi.json',
    'https://[fd00::2]/openapi.json',
    'https://224.0.0.1/openapi.json',
    'https://[ff02::1]/openapi.json',
    'https://[64:ff9b::7f00:1]/openapi.json',
  ])('%s is refused with 400, and nothing is saved', async (url) => {
    const res = await t.admin('PATCH', SETTINGS, { apiReference: { url } });
    expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({
      status: 400,
      code: 'validation_failed',
      field: 'apiReference.url',
    });
    expect((await t.admin('GET', SETTINGS)).body.apiReference).toBeNull();
  });
});

describe('at fetch time, with http allowed', () => {
  let t: Tollgate;
  let team: Awaited<ReturnType<typeof site>>;
  let inside: Awaited<ReturnType<typeof site>>;
  let closedPort: number;

  beforeAll(async () => {
    [team, inside] = await Promise.all([site(publicAddress!), site('127.0.0.1')]);
    servers.push(team.server, inside.server);
    const closed = await site('127.0.0.1');
    closedPort = (closed.server.address() as AddressInfo).port;
    await new Promise((resolve) => closed.server.close(resolve));
    t = await tollgate({ PORTAL_REFERENCE_ALLOW_HTTP: 'true' });
  }, 60_000);

  it('fetches the document of a public site', async () => {
    const res = await t.admin('PATCH', SETTINGS, { apiReference: { url: `${team.url}/openapi.json` } });
    expect(res.status).toBe(200);
    expect(res.body.apiReference).toMatchObject({ fetchError: null, fetchedAt: expect.any(String) });
  });

  it('follows no redirect to an address inside, in any spelling or by name, and says the same whether the port is open or closed', async () => {
    const port = new URL(inside.url).port;
    const targets = [
      `http://127.0.0.1:${port}/openapi.json`,
      `http://0x7f000001:${port}/openapi.json`,
      `http://[::ffff:127.0.0.1]:${port}/openapi.json`,
      `http://localhost:${port}/openapi.json`,
      `http://127.0.0.1:${closedPort}/openapi.json`,
    ];
    for (const to of targets) {
      const url = `${team.url}/redirect?to=${encodeURIComponent(to)}`;
      const saved = await t.admin('PATCH', SETTINGS, { apiReference: { url } });
      expect({ to, status: saved.status, error: saved.body.apiReference?.fetchError }).toEqual({
        to,
        status: 200,
        error: NOT_FETCHED,
      });
      const again = await t.admin('POST', `${SETTINGS}/api-reference/fetch`);
      expect({ to, error: again.body.fetchError }).toEqual({ to, error: NOT_FETCHED });
    }
    // Each fetch has answered: a request that reached inside would have been counted by now.
    expect(inside.requests()).toBe(0);
  });
});

it('with PORTAL_REFERENCE_ALLOW_PRIVATE=true, a site on loopback is fetched', async () => {
  const inside = await site('127.0.0.1');
  servers.push(inside.server);
  const t = await tollgate({ PORTAL_REFERENCE_ALLOW_HTTP: 'true', PORTAL_REFERENCE_ALLOW_PRIVATE: 'true' });
  const res = await t.admin('PATCH', SETTINGS, { apiReference: { url: `${inside.url}/openapi.json` } });
  expect(res.body.apiReference).toMatchObject({ fetchError: null, fetchedAt: expect.any(String) });
  expect(inside.requests()).toBe(1);
}, 60_000);
