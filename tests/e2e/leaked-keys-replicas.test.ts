/**
 * Keys that report their own leaks (contract section 31) on three replicas over Redis and Postgres:
 * GitHub's signed reports (keys the test generates and serves as GitHub does), `keys/leaked`, the
 * key disabled everywhere within a second, replays on any replica changing nothing, concurrent reports
 * of one key on several replicas acting on it once (disabled or rolled), and a flood of wrong
 * checksums costing Redis nothing per request (a private redis-server's INFO commandstats).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { generateChecksummedSecret } from '../../src/keys/secret-format.js';
import { GitHubKeyServer, newSigningKey, reportBody, signedHeaders } from '../helpers/github-scanning.js';
import { RedisServer } from '../helpers/redis-server.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { hit, msUntilSeenEverywhere, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

const REPORTS = '/tollgate/secret-scanning/github';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The replicas' clock: the flood below falls in one minute of the wrong-key budget, however slow the machine. */
const clock = new TestClock();
let fleet: Fleet;
let replicas: Tollgate[];
let github: GitHubKeyServer;
let redis: RedisServer;
let receiver: WebhookReceiver;
let hookId: string;

beforeAll(async () => {
  [github, redis, receiver] = await Promise.all([
    GitHubKeyServer.start(),
    RedisServer.start(),
    WebhookReceiver.start(),
  ]);
  fleet = await startFleet(3, {
    GITHUB_SECRET_SCANNING_KEYS_URL: github.url,
    REDIS_URL: redis.url,
    ...clock.env,
  });
  replicas = fleet.members;
  const hook = await replicas[0]!.admin('POST', '/tollgate/webhooks', {
    url: receiver.url,
    events: ['key.leaked'],
  });
  expect(hook.status).toBe(201);
  receiver.secret = hook.body.secret;
  hookId = hook.body.id;
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
  await Promise.all([github?.close(), redis?.destroy(), receiver?.close()]);
}, 60_000);

async function newKey(): Promise<{ id: string; secret: string }> {
  const created = await replicas[0]!.admin('POST', '/consumer-api-key/create', { name: 'leaky' });
  expect(created.status).toBe(201);
  return { id: created.body.id, secret: created.body.secret };
}

async function report(
  replica: Tollgate,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const res = await fetch(replica.url + REPORTS, { method: 'POST', headers, body });
  return { status: res.status, text: await res.text() };
}

async function leakEntries(keyId: string): Promise<Record<string, unknown>[]> {
  const log = await replicas[1]!.admin('GET', `/tollgate/audit-log?action=key.leak&targetId=${keyId}`);
  expect(log.status).toBe(200);
  return log.body.auditLog;
}

/** The `key.leaked` events the receiver got for `keyId`, once it got one and every delivery is delivered. */
async function leakedEvents(keyId: string): Promise<Record<string, unknown>[]> {
  const { value } = await waitFor(
    async () => {
      const { deliveries } = (
        await replicas[0]!.admin('GET', `/tollgate/webhooks/${hookId}/deliveries?limit=100`)
      ).body as { deliveries: { state: string }[] };
      const events = receiver.ofType('key.leaked').filter((e) => e.data.consumerApiKeyId === keyId);
      return { delivered: deliveries.every((d) => d.state === 'delivered'), events };
    },
    ({ delivered, events }) => delivered && events.length > 0,
    { what: `the key.leaked events of ${keyId}, every delivery delivered` },
  );
  return value.events.map((e) => e.data);
}

/** The labels of one answer, in the order reported. */
const labelsOf = (answer: readonly { label: string }[]) => answer.map((a) => a.label);

/**
 * Six reports of one key at once, each answered with its labels: the first taken is the true positive,
 * and the key is disabled once, by `actor`, with one audit entry and one event.
 */
async function expectDisabledOnce(labels: string[][], keyId: string, actor: object): Promise<void> {
  expect(labels.map((l) => l.join()).sort()).toEqual([
    ...Array.from({ length: 5 }, () => 'false_positive'),
    'true_positive',
  ]);
  const entries = await leakEntries(keyId);
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({
    actor,
    changes: { before: { enabled: true }, after: { enabled: false } },
  });
  expect(await leakedEvents(keyId)).toHaveLength(1);
}

describe('reports of leaked secrets, three replicas on Redis and Postgres', () => {
  it('does nothing for an unsigned, tampered or unknown-key report: 401, the key keeps working', async () => {
    const key = await newKey();
    const body = reportBody([key.secret]);
    const signed = signedHeaders(body, github.current);
    const readsBefore = github.reads;
    const answers = [
      await report(replicas[0]!, body, { 'content-type': 'application/json' }),
      await report(replicas[1]!, body.replace('config.js', 'config.ts'), signed),
      await report(replicas[2]!, body, { ...signed, 'github-public-key-signature': 'bm90IGEgc2lnbmF0dXJl' }),
      await report(replicas[0]!, body, signedHeaders(body, newSigningKey())),
      await report(replicas[0]!, body, signedHeaders(body, newSigningKey())),
    ];
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401]);
    expect(answers.every((a) => JSON.parse(a.text).code === 'unauthorized')).toBe(true);
    // Keys naming unknown identifiers are read again at most once a minute per replica.
    expect(github.reads - readsBefore).toBeLessThanOrEqual(3);
    for (const replica of replicas) expect(await hit(replica, key.secret)).toBe(200);
    expect(await leakEntries(key.id)).toEqual([]);
  });

  it('answers a signed body that is not a report with 400, and one too large with 413, never a 500', async () => {
    const signed = async (body: string) =>
      (await report(replicas[0]!, body, signedHeaders(body, github.current))).text;
    expect(JSON.parse(await signed('not json')).code).toBe('invalid_json');
    expect(JSON.parse(await signed('{"token": "x"}')).code).toBe('validation_failed');
    expect(JSON.parse(await signed('[]')).code).toBe('validation_failed');
    expect(JSON.parse(await signed('[{"token": 42, "type": "t"}]')).code).toBe('validation_failed');
    const huge = reportBody(Array.from({ length: 700 }, () => 'x'.repeat(100)));
    expect(JSON.parse(await signed(huge)).code).toBe('payload_too_large');
  });

  it('disables a reported key on every replica within 1 s, records it and tells the webhook, never the secret', async () => {
    const key = await newKey();
    for (const replica of replicas) expect(await hit(replica, key.secret)).toBe(200);
    const unknown = generateChecksummedSecret();
    const body = reportBody([key.secret, unknown]);
    const started = performance.now();
    const answer = await report(replicas[0]!, body, signedHeaders(body, github.current));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual([
      { token_hash: sha256(key.secret), token_type: 'tollgate_api_key', label: 'true_positive' },
      { token_hash: sha256(unknown), token_type: 'tollgate_api_key', label: 'false_positive' },
    ]);
    const ms = await msUntilSeenEverywhere(
      started,
      replicas.map((replica) => async () => (await hit(replica, key.secret)) === 403),
    );
    expect(ms).toBeLessThan(1_000);

    const url = 'https://github.com/octocat/hello-world/blob/main/config.js';
    const detail = await replicas[2]!.admin('GET', `/consumer-api-key/${key.id}`);
    expect(detail.body).toMatchObject({
      enabled: false,
      leak: { at: expect.any(String), source: 'github', url, action: 'disable' },
    });
    const [entry, ...more] = await leakEntries(key.id);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      actor: { type: 'system', name: 'secret-scanning' },
      changes: { before: { enabled: true }, after: { enabled: false, leak: { source: 'github', url } } },
    });
    const { value: events } = await waitFor(
      async () => receiver.ofType('key.leaked').filter((e) => e.data.consumerApiKeyId === key.id),
      (found) => found.length > 0,
    );
    expect(events.map((e) => e.data)).toEqual([
      { consumerApiKeyId: key.id, consumerId: null, source: 'github', url, action: 'disable' },
    ]);
    const everything = JSON.stringify([entry, receiver.attempts.map((a) => a.body), detail.body.leak]);
    expect(everything).not.toContain(key.secret);
  });

  it('answers a report sent again, to any replica, as it answered it, and changes nothing again', async () => {
    const key = await newKey();
    const body = reportBody([key.secret], 'replayed.js');
    const headers = signedHeaders(body, github.current);
    // The same signed body to all three replicas at once: handled once.
    const first = await Promise.all(replicas.map((replica) => report(replica, body, headers)));
    expect(first.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(new Set(first.map((a) => a.text)).size).toBe(1);
    expect(JSON.parse(first[0]!.text)).toEqual([
      { token_hash: sha256(key.secret), token_type: 'tollgate_api_key', label: 'true_positive' },
    ]);
    expect(await leakEntries(key.id)).toHaveLength(1);
    // Its owner enables it again; a replay must not disable it once more.
    expect((await replicas[0]!.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: true })).status).toBe(
      200,
    );
    const replayed = await report(replicas[2]!, body, headers);
    expect(replayed).toEqual(first[0]);
    for (const replica of replicas) expect(await hit(replica, key.secret)).toBe(200);
    expect(await leakEntries(key.id)).toHaveLength(1);
  });

  it('takes any scanner’s report at keys/leaked with keys:write, the caller and source recorded', async () => {
    const key = await newKey();
    const reader = await replicas[0]!.admin('POST', '/tollgate/admin-tokens', {
      name: 'read-only',
      scopes: ['keys:read'],
    });
    const refused = await fetch(replicas[1]!.url + '/tollgate/keys/leaked', {
      method: 'POST',
      headers: { authorization: `Bearer ${reader.body.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ secrets: [key.secret] }),
    });
    expect(refused.status).toBe(403);
    const answer = await replicas[1]!.admin('POST', '/tollgate/keys/leaked', {
      secrets: [key.secret],
      source: 'gitleaks in CI',
    });
    expect(answer).toEqual({
      status: 200,
      body: [{ token_hash: sha256(key.secret), token_type: 'tollgate_api_key', label: 'true_positive' }],
    });
    const [entry] = await leakEntries(key.id);
    expect(entry).toMatchObject({
      actor: { type: 'root' },
      changes: { after: { leak: { source: 'gitleaks in CI', url: null, action: 'disable' } } },
    });
    // Disabled now: a second report of it is a false positive, and changes nothing.
    const again = await replicas[2]!.admin('POST', '/tollgate/keys/leaked', { secrets: [key.secret] });
    expect(again.body[0].label).toBe('false_positive');
    expect(await leakEntries(key.id)).toHaveLength(1);
    expect((await replicas[0]!.admin('POST', '/tollgate/keys/leaked', { secrets: [] })).status).toBe(400);
  });

  it('acts once on a key that several scanners report at once to any replica: one true positive, one entry, one event', async () => {
    const key = await newKey();
    const scanned = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        replicas[i % 3]!.admin('POST', '/tollgate/keys/leaked', {
          secrets: [key.secret],
          source: `scanner${i}`,
        }),
      ),
    );
    expect(scanned.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    await expectDisabledOnce(
      scanned.map((a) => labelsOf(a.body)),
      key.id,
      { type: 'root' },
    );
  });

  it('acts once on a token GitHub reports at several urls at once, to any replica', async () => {
    const found = await newKey();
    const bodies = Array.from({ length: 6 }, (_, i) => reportBody([found.secret], `found-${i}.js`));
    const reported = await Promise.all(
      bodies.map((body, i) => report(replicas[i % 3]!, body, signedHeaders(body, github.current))),
    );
    expect(reported.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    await expectDisabledOnce(
      reported.map((a) => labelsOf(JSON.parse(a.text))),
      found.id,
      { type: 'system', name: 'secret-scanning' },
    );
  });

  it('labels every entry of a secret in one report alike and disables its key once', async () => {
    const key = await newKey();
    const scanned = await replicas[0]!.admin('POST', '/tollgate/keys/leaked', {
      secrets: [key.secret, key.secret],
    });
    // GitHub found one token at two urls.
    const found = await newKey();
    const body = JSON.stringify([
      ...JSON.parse(reportBody([found.secret], 'a.js')),
      ...JSON.parse(reportBody([found.secret], 'b.js')),
    ]);
    const answer = await report(replicas[1]!, body, signedHeaders(body, github.current));
    expect([scanned.body, JSON.parse(answer.text)].map(labelsOf)).toEqual([
      ['true_positive', 'true_positive'],
      ['true_positive', 'true_positive'],
    ]);
    for (const { id } of [key, found]) {
      expect(await leakEntries(id)).toHaveLength(1);
      expect(await leakedEvents(id)).toHaveLength(1);
    }
  });

  it('rolls a key once however many scanners report it at once, with LEAKED_KEY_ACTION=roll', async () => {
    // Two more replicas of the deployment that roll leaked keys, stopped before the flood below counts
    // the replicas' Redis calls.
    const rollers = await fleet.replicas.start(2, { LEAKED_KEY_ACTION: 'roll' });
    try {
      const created = await rollers[0]!.admin('POST', '/consumer-api-key/create', { name: 'rolled once' });
      const { id, secret } = created.body as { id: string; secret: string };
      const scanned = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          rollers[i % 2]!.admin('POST', '/tollgate/keys/leaked', {
            secrets: [secret],
            source: `scanner${i}`,
          }),
        ),
      );
      expect(scanned.map((a) => labelsOf(a.body).join()).sort()).toEqual([
        'false_positive',
        'false_positive',
        'false_positive',
        'false_positive',
        'false_positive',
        'true_positive',
      ]);
      const entries = await leakEntries(id);
      expect(entries).toEqual([
        expect.objectContaining({
          changes: expect.objectContaining({ after: expect.objectContaining({ secretRolled: true }) }),
        }),
      ]);
      expect(await leakedEvents(id)).toEqual([expect.objectContaining({ action: 'roll' })]);
      const rolled = (await rollers[1]!.admin('GET', `/consumer-api-key/${id}`)).body.secret as string;
      for (const replica of rollers)
        expect([await hit(replica, secret), await hit(replica, rolled)]).toEqual([401, 200]);
    } finally {
      await Promise.all(rollers.map((replica) => replica.stop()));
    }
  }, 60_000);

  it('answers a flood of wrong checksums with 401 at no Redis call per request, and counts them against the address', async () => {
    // A fresh minute of the address's budget, the whole flood inside it (a fresh clone's run saw the
    // flood cross a minute's end and the count split over two windows).
    const minute = clock.after(MINUTE_MS, 100);
    const key = await newKey();
    // Known to every replica before the address runs out of budget: it keeps working after.
    for (const replica of replicas) expect(await hit(replica, key.secret)).toBe(200);
    const forged = () => {
      const secret = generateChecksummedSecret();
      return secret.slice(0, -1) + (secret.endsWith('0') ? '1' : '0');
    };
    const before = await commandCalls();
    const started = performance.now();
    const statuses: number[] = [];
    // Ten at a time on each replica: the flood's length, and so the background work that goes on
    // meanwhile, stays short of the refusals even on a loaded machine.
    for (let round = 0; round < 10; round++)
      statuses.push(
        ...(await Promise.all(
          replicas.flatMap((replica) => Array.from({ length: 10 }, () => hit(replica, forged()))),
        )),
      );
    const floodMs = performance.now() - started;
    // Read at once: waiting for the shared count below polls this Redis itself.
    const duringFlood = await commandCalls();
    // 300 wrong secrets from one address (the loopback the test sends from), its budget 100: each
    // replica's own count allows up to 100 until the shared count, sent every half second, arrives.
    const refused = statuses.filter((s) => s === 401).length;
    expect(refused).toBeGreaterThanOrEqual(100);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    // The shared count gets every 401 exactly once, in a few calls: then every replica refuses the address.
    const { value: counted } = await waitFor(
      () => failuresCounted(minute),
      (count) => count >= refused,
      { timeoutMs: 3_000 },
    );
    expect(counted).toBe(refused);
    const after = await commandCalls();
    const halfSeconds = Math.ceil(floodMs / 500) + 1;
    expect(after.incrby! - (before.incrby ?? 0)).toBeLessThanOrEqual(3 * halfSeconds);
    const spent = Object.entries(duringFlood).reduce(
      (sum, [name, calls]) => sum + calls - (before[name] ?? 0),
      0,
    );
    // Everything the replicas sent Redis during the flood, their background work included: fewer than
    // the refusals.
    expect(spent).toBeLessThan(300);
    for (const replica of replicas) expect(await hit(replica, forged())).toBe(429);
    for (const replica of replicas) expect(await hit(replica, key.secret)).toBe(200);
  });
});

/** The wrong-key count of the loopback address (the private redis-server's only one) in the minute from `minute`. */
async function failuresCounted(minute: number): Promise<number> {
  const connection = new Redis(redis.url);
  try {
    const [name] = await connection.keys(`*auth-failures:keys:*:${minute}`);
    return name === undefined ? 0 : Number(await connection.get(name));
  } finally {
    connection.disconnect();
  }
}

/** `cmdstat_<name>:calls=N` of the private redis-server, as name → calls. */
async function commandCalls(): Promise<Record<string, number>> {
  const connection = new Redis(redis.url);
  try {
    const info = await connection.info('commandstats');
    const calls: Record<string, number> = {};
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
    return calls;
  } finally {
    connection.disconnect();
  }
}
