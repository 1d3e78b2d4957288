/**
 * Consumer secrets through the built server on a real Postgres: encrypted at rest (the database rows
 * are read directly and searched for the secret in every encoding), re-encrypted by
 * `node dist/src/main.js rotate-secrets`, readable with only the new key afterwards, not with only the
 * old one (start-up refuses it, naming the variable), and never written to any log.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import pg from 'pg';
import { startBackend, type Backend } from '../e2e/helpers/backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from '../e2e/helpers/tollgate.js';
import { waitFor } from '../helpers/poll.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const ROOT = resolve(import.meta.dirname, '../..');
const OLD_KEY = randomBytes(32).toString('base64');
const NEW_KEY = randomBytes(32).toString('base64');

let database: TestDatabase;
let backend: Backend;
/** A webhook's receiver: its signing secret is sealed like the keys' and rotated with them. */
let receiver: WebhookReceiver;
const running: Tollgate[] = [];
const keys: { id: string; secret: string }[] = [];
/** Output of processes startTollgate doesn't run (the rotate command): scanned here. */
const otherOutput: string[] = [];

async function serve(env: Record<string, string>): Promise<Tollgate> {
  const t = await startTollgate({
    DATABASE_URL: database.url,
    UPSTREAM_URL: backend.url,
    // Debug logs the most (one access-log line per request): secrets must not be in it either.
    LOG_LEVEL: 'debug',
    ...env,
  });
  running.push(t);
  return t;
}

async function rows(): Promise<
  { id: string; secret_hash: Buffer; secret_ciphertext: Buffer; text: string }[]
> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const result = await client.query<{
      id: string;
      secret_hash: Buffer;
      secret_ciphertext: Buffer;
      text: string;
    }>(
      'select id, secret_hash, secret_ciphertext, row_to_json(k)::text as text from api_keys k order by seq',
    );
    return result.rows;
  } finally {
    await client.end();
  }
}

/** Every table of the database as text (bytea appears as \x-hex): where a secret must not be. */
async function wholeDatabase(): Promise<string> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      "select quote_ident(table_schema) || '.' || quote_ident(table_name) as name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')",
    );
    let all = '';
    for (const { name } of tables.rows) {
      const result = await client.query<{ text: string }>(
        `select row_to_json(t)::text as text from ${name} t`,
      );
      all += result.rows.map((r) => r.text).join('\n') + '\n';
    }
    return all;
  } finally {
    await client.end();
  }
}

/** The secret as it could appear: plain, its random part, hex and base64 of either, the raw bytes as hex. */
function encodings(secret: string): string[] {
  const random = secret.slice(3);
  const rawBytes = Buffer.from(random, 'base64url');
  return [
    secret,
    random,
    Buffer.from(secret).toString('hex'),
    Buffer.from(secret).toString('base64'),
    rawBytes.toString('hex'),
    rawBytes.toString('base64'),
  ];
}

function runRotate(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, ['dist/src/main.js', 'rotate-secrets'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('exit', (code) => {
      otherOutput.push(output);
      resolvePromise({ code, output });
    });
  });
}

beforeAll(async () => {
  database = await createTestDatabase();
  backend = await startBackend();
  receiver = await WebhookReceiver.start();
}, 60_000);

afterAll(async () => {
  for (const t of running) await t.stop();
  await backend?.close();
  await receiver?.close();
  await database?.drop();
  // Every process this file started: the servers (via the helper) and the rotate command.
  expectNoSecretsLogged();
  const leaks = keys.filter(({ secret }) =>
    otherOutput.some((out) => encodings(secret).some((e) => out.includes(e))),
  );
  expect(leaks).toEqual([]);
  console.log(
    `secrets figures: ${JSON.stringify({ secretsCreated: keys.length, secretsFoundInLogs: leaks.length })}`,
  );
}, 60_000);

describe('secrets at rest, rotation and logs', () => {
  let ciphertextsBefore: Buffer[];

  it('creates keys through the built server; rows hold sha256(secret) and AES-GCM ciphertext, never the secret', async () => {
    const t = await serve({ SECRET_ENCRYPTION_KEY: OLD_KEY });
    for (let i = 0; i < 5; i++) {
      const created = await t.admin('POST', '/consumer-api-key/create', { name: `secret test ${i}` });
      expect(created.status).toBe(201);
      keys.push({ id: created.body.id, secret: created.body.secret });
    }
    // Use every secret both ways, and read every detail: logs get their chance to leak.
    for (const { id, secret } of keys) {
      expect((await fetch(`${t.url}/x`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(
        200,
      );
      expect((await fetch(`${t.url}/y?k=1`, { headers: { 'x-api-key': secret } })).status).toBe(200);
      expect((await t.admin('GET', `/consumer-api-key/${id}`)).body.secret).toBe(secret);
    }
    expect(
      (await fetch(`${t.url}/x`, { headers: { authorization: `Bearer tg_${'A'.repeat(43)}` } })).status,
    ).toBe(401);
    // The backend got each secret in x-api-key, as docs/guides/keys.md says.
    expect(backend.received.filter((r) => keys.some((k) => k.secret === r.headers['x-api-key'])).length).toBe(
      10,
    );

    const stored = await rows();
    expect(stored.map((r) => r.id)).toEqual(keys.map((k) => k.id));
    for (const [i, row] of stored.entries()) {
      const { secret } = keys[i]!;
      expect(Buffer.from(row.secret_hash).equals(createHash('sha256').update(secret).digest())).toBe(true);
      // IV (12) + tag (16) + ciphertext as long as the secret.
      expect(row.secret_ciphertext.length).toBe(12 + 16 + secret.length);
      for (const e of encodings(secret)) {
        expect(row.text.includes(e)).toBe(false);
        expect(Buffer.from(row.secret_ciphertext).includes(Buffer.from(e))).toBe(false);
      }
      expect(Buffer.from(row.secret_ciphertext).includes(Buffer.from(secret.slice(3), 'base64url'))).toBe(
        false,
      );
    }
    const hook = await t.admin('POST', '/tollgate/webhooks', { url: receiver.url, events: ['key.created'] });
    expect(hook.status).toBe(201);
    receiver.secret = hook.body.secret;
    const signingKey = receiver.secret.slice('whsec_'.length);
    const everything = await wholeDatabase();
    expect(keys.filter(({ secret }) => encodings(secret).some((e) => everything.includes(e)))).toEqual([]);
    expect(
      [signingKey, Buffer.from(signingKey, 'base64').toString('hex')].filter((e) => everything.includes(e)),
    ).toEqual([]);
    ciphertextsBefore = stored.map((r) => Buffer.from(r.secret_ciphertext));
    expect(await t.stop()).toBe(0);
  });

  it('rotate-secrets without the previous key refuses to start and changes nothing', async () => {
    const { code, output } = await runRotate({ DATABASE_URL: database.url, SECRET_ENCRYPTION_KEY: NEW_KEY });
    expect(code).not.toBe(0);
    expect(output).toMatch(/SECRET_ENCRYPTION_KEY_PREVIOUS/);
    expect((await rows()).map((r) => Buffer.from(r.secret_ciphertext))).toEqual(ciphertextsBefore);
  });

  it('rotate-secrets re-encrypts every secret with the new key: every ciphertext changes, every hash stays', async () => {
    const hashesBefore = (await rows()).map((r) => Buffer.from(r.secret_hash));
    const { code, output } = await runRotate({
      DATABASE_URL: database.url,
      SECRET_ENCRYPTION_KEY: NEW_KEY,
      SECRET_ENCRYPTION_KEY_PREVIOUS: OLD_KEY,
    });
    expect({ code, output: output.trim() }).toEqual({
      code: 0,
      // Every key's secret and the webhook's signing secret.
      output: `re-encrypted ${keys.length + 1} secrets with the new SECRET_ENCRYPTION_KEY`,
    });
    const after = await rows();
    for (const [i, row] of after.entries()) {
      expect(Buffer.from(row.secret_ciphertext).equals(ciphertextsBefore[i]!)).toBe(false);
      expect(Buffer.from(row.secret_hash).equals(hashesBefore[i]!)).toBe(true);
      for (const e of encodings(keys[i]!.secret)) expect(row.text.includes(e)).toBe(false);
    }
  });

  it('a server with only the new key returns every secret, every key still authenticates, and webhooks are signed with their secret', async () => {
    const t = await serve({ SECRET_ENCRYPTION_KEY: NEW_KEY });
    const created = await t.admin('POST', '/consumer-api-key/create', { name: 'after rotation' });
    await waitFor(
      async () => receiver.events.size,
      (n) => n === 1,
      { timeoutMs: 15_000 },
    );
    expect([...receiver.events.values()]).toEqual([
      expect.objectContaining({
        type: 'key.created',
        data: expect.objectContaining({ consumerApiKeyId: created.body.id }),
      }),
    ]);
    expect(receiver.attempts.every((a) => a.verified)).toBe(true);
    for (const { id, secret } of keys) {
      const detail = await t.admin('GET', `/consumer-api-key/${id}`);
      expect(detail.status).toBe(200);
      expect(detail.body.secret).toBe(secret);
      expect((await fetch(`${t.url}/z`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(
        200,
      );
    }
    expect(await t.stop()).toBe(0);
  });

  it('a server with only the old key refuses to start, naming the variable, and reveals no secret', async () => {
    const failure = await serve({ SECRET_ENCRYPTION_KEY: OLD_KEY }).then(
      () => 'started',
      (err: Error) => err.message,
    );
    expect(failure).toMatch(/exited \(1\) before listening/);
    expect(failure).toContain('tollgate: SECRET_ENCRYPTION_KEY: does not decrypt the stored secrets');
    expect(keys.some((k) => failure.includes(k.secret))).toBe(false);
  });
});
