/**
 * docs/guides/operations.md (Bodies and transfers) on the management routes: a request that sends `Expect: 100-continue` is
 * authenticated before `100 Continue` is sent, so a caller without a valid token never uploads its
 * body; an authenticated one gets the 100, sends the body and its answer.
 */
import { continueExchange } from '../helpers/continue-exchange.js';
import { MODES, type Deployment } from './helpers/modes.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const body = JSON.stringify({ name: 'sent-after-100' });

describe.each(MODES)('$name', (mode) => {
  let deployment: Deployment;
  let tollgate: Tollgate;

  /** POST /consumer-api-key/create with `Expect: 100-continue` and these extra header lines. */
  const create = (headers: string[]) =>
    continueExchange(
      Number(new URL(tollgate.url).port),
      [
        'POST /consumer-api-key/create HTTP/1.1',
        'Host: tollgate.test',
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        ...headers,
      ],
      body,
    );

  beforeAll(async () => {
    deployment = await mode.deploy();
    tollgate = await startTollgate(deployment.env);
  }, 60_000);

  afterAll(async () => {
    await tollgate?.stop();
    await deployment?.dispose();
  });

  it.each([
    ['a wrong token', ['Authorization: Bearer not-the-root-token-at-all']],
    ['no token', []],
  ])(
    'answers %s 401 without 100 Continue, and closes the connection the body never came on',
    async (_label, headers) => {
      const refused = await create(headers);
      expect(refused.first).toMatch(/^HTTP\/1\.1 401 /);
      expect(refused.first).toMatch(/\r\nconnection: close\r\n/i);
      expect(refused.first).toContain('"code":"unauthorized"');
      const listed = await tollgate.admin('GET', '/consumer-api-key/list');
      expect(JSON.stringify(listed.body)).not.toContain('sent-after-100');
    },
  );

  it('sends 100 Continue to an authenticated caller, then reads the body and answers', async () => {
    const accepted = await create([`Authorization: Bearer ${tollgate.rootToken}`]);
    expect(accepted.first).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    expect(accepted.final).toMatch(/^HTTP\/1\.1 201 /);
    expect(accepted.final).toContain('"name":"sent-after-100"');
  });
});

it('never writes a secret to its logs', () => expectNoSecretsLogged());
