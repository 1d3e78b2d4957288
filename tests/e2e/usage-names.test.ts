/**
 * The names usage counts under are the ones the client meant: a customer id sent as UTF-8 is shown as
 * that text (bytes that are not UTF-8 as U+FFFD, decision 0022), and an endpoint cut at 512 characters
 * ends on a whole character, never inside a percent-escape.
 */
import { request } from 'node:http';
import { startBackend, type Backend } from './helpers/backend.js';
import { MODES, type Deployment } from './helpers/modes.js';
import { waitFor } from '../helpers/poll.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

/** A GET through Tollgate whose customer id header carries exactly `customerIdBytes` on the wire. */
function get(tollgate: Tollgate, path: string, secret: string, customerIdBytes?: Buffer): Promise<number> {
  const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
  // node:http writes a header string one byte per character (Latin-1): this puts the raw bytes on the wire.
  if (customerIdBytes) headers['x-customer-id'] = customerIdBytes.toString('latin1');
  return new Promise((resolve, reject) => {
    const req = request(tollgate.url + path, { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Usage {
  totalRequests: number;
  endpoints: { endpoint: string; requests: number }[];
  usageByCustomer: { customerId: string; requests: number }[];
}

/** The key detail's usage once it counts `requests` requests. */
async function usageOf(tollgate: Tollgate, keyId: string, requests: number): Promise<Usage> {
  const { value } = await waitFor(
    async () => (await tollgate.admin('GET', `/consumer-api-key/${keyId}`)).body.usage as Usage,
    (usage) => usage.totalRequests >= requests,
  );
  return value;
}

describe.each(MODES)('$name', (mode) => {
  let backend: Backend;
  let deployment: Deployment;
  let tollgate: Tollgate;

  beforeAll(async () => {
    [backend, deployment] = await Promise.all([startBackend(), mode.deploy()]);
    tollgate = await startTollgate({ ...deployment.env, UPSTREAM_URL: backend.url });
  }, 60_000);

  afterAll(async () => {
    await tollgate?.stop();
    await backend?.close();
    await deployment?.dispose();
  });

  it('counts a UTF-8 customer id as the text sent, and bytes that are not UTF-8 as U+FFFD', async () => {
    const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', {
      name: 'utf8-customers',
    });
    expect(await get(tollgate, '/v1/a', key.secret, Buffer.from('café', 'utf8'))).toBe(200);
    expect(await get(tollgate, '/v1/a', key.secret, Buffer.from('東京-🚀', 'utf8'))).toBe(200);
    expect(await get(tollgate, '/v1/a', key.secret, Buffer.from([0x63, 0x61, 0x66, 0xe9]))).toBe(200); // Latin-1 "café"

    const usage = await usageOf(tollgate, key.id, 3);
    expect(usage.usageByCustomer.map((c) => c.customerId).sort()).toEqual(
      ['caf\uFFFD', 'café', '東京-🚀'].sort(),
    );
    // The backend gets the header byte for byte, as it was sent.
    const forwarded = backend.received
      .filter((r) => r.headers['x-customer-id'] !== undefined)
      .map((r) => Buffer.from(r.headers['x-customer-id'] as string, 'latin1').toString('hex'));
    expect(forwarded).toEqual(expect.arrayContaining([Buffer.from('café').toString('hex'), '636166e9']));
  });

  it('cuts an endpoint longer than 512 characters at a whole character, never inside a percent-escape', async () => {
    const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'long-paths' });
    const prefix = '/' + 'a'.repeat(504); // 505 characters: the 512th falls inside the third escape below
    expect(await get(tollgate, `${prefix}%F0%9F%98%80/rest`, key.secret)).toBe(200);
    // The cut falls between two escapes of one character: the two ASCII escapes before it stay, the character
    // goes. They escape reserved characters (a space, `!`): an escaped unreserved one (%41) is decoded
    // before usage counts the path (docs/guides/routes.md, "Paths").
    expect(await get(tollgate, `/${'b'.repeat(499)}%20%21%F0%9F%98%80`, key.secret)).toBe(200);

    const usage = await usageOf(tollgate, key.id, 2);
    expect(usage.endpoints.map((e) => e.endpoint).sort()).toEqual(
      [prefix, `/${'b'.repeat(499)}%20%21`].sort(),
    );
  });
});

it('never writes a secret to its logs', () => expectNoSecretsLogged());
