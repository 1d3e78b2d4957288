/**
 * Keys that report their own leaks in embedded mode (SQLite, in-process counters), with
 * `LEAKED_KEY_ACTION=roll` and a prefix of the deployment's own: GitHub's signed report rolls the key
 * (the leaked secret refused at once), a replay changes nothing, a key GitHub starts signing with is
 * read after at most a minute (the process's clock moved by TEST_CLOCK_FILE), and the portal shows
 * the notice and masks with the key's prefix.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GitHubKeyServer, newSigningKey, reportBody, signedHeaders } from '../helpers/github-scanning.js';
import { PortalUser } from '../helpers/portal-user.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { hit, startEmbedded, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

const REPORTS = '/tollgate/secret-scanning/github';

let fleet: Fleet;
let tollgate: Tollgate;
let github: GitHubKeyServer;
const clock = new TestClock();

beforeAll(async () => {
  github = await GitHubKeyServer.start();
  fleet = await startEmbedded({
    GITHUB_SECRET_SCANNING_KEYS_URL: github.url,
    KEY_PREFIX: 'acme_live_',
    LEAKED_KEY_ACTION: 'roll',
    ...clock.env,
  });
  tollgate = fleet.members[0]!;
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
  await github?.close();
}, 60_000);

async function report(
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const res = await fetch(tollgate.url + REPORTS, { method: 'POST', headers, body });
  return { status: res.status, text: await res.text() };
}

describe('reports of leaked secrets, embedded, LEAKED_KEY_ACTION=roll', () => {
  it('rolls a reported key: the leaked secret refused at once, the new one working, a replay changing nothing', async () => {
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'mobile' });
    const { id, secret } = created.body as { id: string; secret: string };
    expect(secret).toMatch(/^acme_live_[0-9A-Za-z]{36}$/);
    expect(await hit(tollgate, secret)).toBe(200);

    const body = reportBody([secret]);
    const headers = signedHeaders(body, github.current);
    const first = await report(body, headers);
    expect(first.status).toBe(200);
    expect(JSON.parse(first.text)[0].label).toBe('true_positive');
    expect(await hit(tollgate, secret)).toBe(401);
    const detail = await tollgate.admin('GET', `/consumer-api-key/${id}`);
    expect(detail.body).toMatchObject({ enabled: true, leak: { source: 'github', action: 'roll' } });
    const rolled = detail.body.secret as string;
    expect(rolled).toMatch(/^acme_live_[0-9A-Za-z]{36}$/);
    expect(rolled).not.toBe(secret);
    expect(await hit(tollgate, rolled)).toBe(200);

    // GitHub sends it again: the same answer, and the new secret is not rolled away.
    expect(await report(body, headers)).toEqual(first);
    expect((await tollgate.admin('GET', `/consumer-api-key/${id}`)).body.secret).toBe(rolled);
    const log = await tollgate.admin('GET', `/tollgate/audit-log?action=key.leak&targetId=${id}`);
    expect(log.body.auditLog).toHaveLength(1);
    expect(JSON.stringify(log.body)).not.toContain(secret);
  });

  it('refuses a report whose text would reach storage with a control character: 400, nothing done', async () => {
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'clean' });
    const { id, secret } = created.body as { id: string; secret: string };
    const signed = JSON.parse(reportBody([secret])) as Record<string, string>[];
    signed[0]!.url = 'https://github.com/o/r/blob/main/a\u0000b.js';
    const body = JSON.stringify(signed);
    expect((await report(body, signedHeaders(body, github.current))).status).toBe(400);
    const scanned = await tollgate.admin('POST', '/tollgate/keys/leaked', {
      secrets: [secret],
      source: 'ci\r\nx',
    });
    expect(scanned.status).toBe(400);
    expect(scanned.body).toMatchObject({ code: 'validation_failed' });
    const detail = await tollgate.admin('GET', `/consumer-api-key/${id}`);
    expect(detail.body).toMatchObject({ leak: null, enabled: true });
    expect(await hit(tollgate, secret)).toBe(200);
  });

  it('reads the keys again for a key it does not hold, at most once a minute', async () => {
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'rotated' });
    const body = reportBody([created.body.secret]);
    // Read at the first report above; GitHub then starts signing with a new key.
    const readsBefore = github.reads;
    const next = newSigningKey();
    github.served.push(next);
    // The keys were read at the first report, seconds ago: not again until a minute has passed.
    const early = await report(body, signedHeaders(body, next));
    const soon = await report(body, signedHeaders(body, next));
    expect([early.status, soon.status]).toEqual([401, 401]);
    expect(github.reads).toBe(readsBefore);
    clock.advance(MINUTE_MS + 1_000);
    expect((await report(body, signedHeaders(body, next))).status).toBe(200);
    expect(github.reads).toBe(readsBefore + 1);
  });

  it("shows the customer the notice in the portal, the secret masked with the key's own prefix", async () => {
    const consumer = await tollgate.admin('POST', '/tollgate/consumers', { name: 'Initech' });
    const created = await tollgate.admin('POST', '/consumer-api-key/create', {
      name: 'portal key',
      consumerId: consumer.body.consumerId,
    });
    const body = reportBody([created.body.secret], 'leaked-in-portal.js');
    expect((await report(body, signedHeaders(body, github.current))).status).toBe(200);
    const keys = await portalKeys(consumer.body.consumerId as string);
    expect(keys).toEqual([
      expect.objectContaining({
        maskedSecret: expect.stringMatching(/^acme_live_…[0-9A-Za-z]{4}$/),
        leak: expect.objectContaining({ source: 'github', action: 'roll' }),
      }),
    ]);
  });
});

/** The consumer's keys as its portal user reads them. */
async function portalKeys(consumerId: string): Promise<Record<string, unknown>[]> {
  expect((await tollgate.admin('PATCH', '/tollgate/portal/settings', { enabled: true })).status).toBe(200);
  const session = await tollgate.admin('POST', '/tollgate/portal/sessions', {
    consumerId,
    user: { id: 'u' },
  });
  expect(session.status).toBe(201);
  const user = new PortalUser(tollgate.url);
  expect((await user.signIn(session.body.url as string)).status).toBe(303);
  const keys = await user.call('GET', '/keys');
  expect(keys.status).toBe(200);
  return keys.body.keys as Record<string, unknown>[];
}
