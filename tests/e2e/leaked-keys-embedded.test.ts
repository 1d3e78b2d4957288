/**
 * Keys that report their own leaks in embedded mode (SQLite, in-process counters), with
 * `LEAKED_KEY_ACTION=roll` and a prefix of the deployment's own: GitHub's signed report rolls the key
 * (the leaked secret refused at once), a replay changes nothing, a key GitHub starts signing with is
 * read after at most a minute (the process's clock moved by TEST_CLOCK_FILE) and a report arriving
 * while the keys are read waits for them, a secret listed twice is labelled alike and its key rolled
 * once, a `type` is measured in code points, and the portal shows the notice and masks with the key's
 * prefix.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GitHubKeyServer, newSigningKey, reportBody, signedHeaders } from '../helpers/github-scanning.js';
import { PortalUser } from '../helpers/portal-user.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { hit, sleep, startEmbedded, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

const REPORTS = '/tollgate/secret-scanning/github';
/** An emoji: one code point, two UTF-16 units. */
const ASTRAL = '\u{1F511}';

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

  it('labels every entry of a secret in one report alike, as it was at the report, and rolls its key once', async () => {
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'listed twice' });
    const { id, secret: previous } = created.body as { id: string; secret: string };
    // Rolled with a grace: the previous secret and the current one both open the key.
    const rolled = await tollgate.admin('POST', `/consumer-api-key/${id}/roll`, { gracePeriodSeconds: 3600 });
    const current = rolled.body.secret as string;
    expect([await hit(tollgate, previous), await hit(tollgate, current)]).toEqual([200, 200]);
    const scanned = await tollgate.admin('POST', '/tollgate/keys/leaked', {
      secrets: [previous, previous, current],
    });
    // GitHub found one token at two urls.
    const other = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'found twice' });
    const found = [
      ...JSON.parse(reportBody([other.body.secret], 'a.js')),
      ...JSON.parse(reportBody([other.body.secret], 'b.js')),
    ];
    const body = JSON.stringify(found);
    const answer = await report(body, signedHeaders(body, github.current));
    const labels = (items: { label: string }[]) => items.map((a) => a.label);
    expect([labels(scanned.body), labels(JSON.parse(answer.text))]).toEqual([
      ['true_positive', 'true_positive', 'true_positive'],
      ['true_positive', 'true_positive'],
    ]);

    for (const keyId of [id, other.body.id as string]) {
      const log = await tollgate.admin('GET', `/tollgate/audit-log?action=key.leak&targetId=${keyId}`);
      expect(log.body.auditLog).toEqual([
        expect.objectContaining({
          changes: expect.objectContaining({ after: expect.objectContaining({ secretRolled: true }) }),
        }),
      ]);
    }
    for (const leaked of [previous, current, other.body.secret as string])
      expect(await hit(tollgate, leaked)).toBe(401);
  });

  it('counts the length of a type in code points: 100 astral characters taken, 101 refused', async () => {
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'emoji type' });
    const typed = (type: string) =>
      JSON.stringify(JSON.parse(reportBody([created.body.secret])).map((m: object) => ({ ...m, type })));
    const over = typed(ASTRAL.repeat(101));
    const refused = await report(over, signedHeaders(over, github.current));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text).code).toBe('validation_failed');
    const longest = typed(ASTRAL.repeat(100));
    const taken = await report(longest, signedHeaders(longest, github.current));
    expect(taken.status).toBe(200);
    expect(JSON.parse(taken.text)).toEqual([
      expect.objectContaining({ token_type: ASTRAL.repeat(100), label: 'true_positive' }),
    ]);
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

  it('holds a report that arrives while the keys are being read until they are read, then takes it', async () => {
    const secretOf = async (name: string) =>
      (await tollgate.admin('POST', '/consumer-api-key/create', { name })).body.secret as string;
    const first = await secretOf('slow one');
    const second = await secretOf('slow two');
    // GitHub starts signing with a new key, a minute after the last read, and is slow to list it.
    const next = newSigningKey();
    github.served.push(next);
    clock.advance(MINUTE_MS + 1_000);
    const readsBefore = github.reads;
    let answerGitHub!: () => void;
    github.answerAfter = new Promise((resolve) => (answerGitHub = resolve));
    const firstBody = reportBody([first], 'first.js');
    const secondBody = reportBody([second], 'second.js');
    try {
      const firstAnswer = report(firstBody, signedHeaders(firstBody, next));
      await waitFor(
        async () => github.reads,
        (reads) => reads > readsBefore,
        { what: 'a read of the keys' },
      );
      const secondAnswer = report(secondBody, signedHeaders(secondBody, next));
      // Time for the second report to reach Tollgate while GitHub has not answered yet.
      await sleep(300);
      answerGitHub();
      const answers = await Promise.all([firstAnswer, secondAnswer]);
      expect(answers.map((a) => [a.status, JSON.parse(a.text)[0]?.label])).toEqual([
        [200, 'true_positive'],
        [200, 'true_positive'],
      ]);
      expect(github.reads).toBe(readsBefore + 1);
    } finally {
      github.answerAfter = undefined;
      answerGitHub();
    }
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
