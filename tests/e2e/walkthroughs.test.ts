/**
 * The walk-throughs of the README and the guides (docs/guides/), run as written against the built
 * server and the demo backend.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startTollgate, type Tollgate } from './helpers/tollgate.js';

const ROOT = resolve(import.meta.dirname, '../..');
const GUIDES = 'docs/guides';

/** Where a reader finds walk-throughs: the README, then every guide. */
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, GUIDES))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `${GUIDES}/${f}`),
];

interface Block {
  readonly file: string;
  readonly script: string;
}

/** Every shell block between `<!-- name:start -->` and `<!-- name:end -->` lines in the docs, by name. */
function runnableBlocks(): Map<string, Block> {
  const blocks = new Map<string, Block>();
  for (const file of DOCS) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const found = [...text.matchAll(/^<!-- ([\w-]+):start -->\s*```sh\n([\s\S]*?)```\s*<!-- \1:end -->$/gm)];
    // A start marker without its shell block and end marker would otherwise be skipped unseen.
    const markers = text.match(/^<!-- [\w-]+:start -->$/gm)?.length ?? 0;
    if (markers !== found.length)
      throw new Error(`${file}: a start marker lacks its \`\`\`sh block or its end marker`);
    for (const [, name, script] of found) {
      if (blocks.has(name!))
        throw new Error(`two walk-throughs are named ${name}: rename the one in ${file}`);
      blocks.set(name!, { file, script: script! });
    }
  }
  return blocks;
}

const BLOCKS = runnableBlocks();

function walkthrough(name: string): string {
  const block = BLOCKS.get(name);
  if (block === undefined) throw new Error(`no walk-through named ${name} in ${DOCS.join(', ')}`);
  return block.script;
}

/** A random root token, as the README has the reader make one; the blocks read it from the environment. */
const ROOT_TOKEN = randomBytes(32).toString('hex');

/** Runs a block against `url`; `settings` replaces other `NAME=value` lines of the block (a free port). */
const run = (script: string, url: string, settings: Record<string, string> = {}) =>
  promisify(execFile)(
    'bash',
    [
      '-euo',
      'pipefail',
      '-c',
      Object.entries(settings).reduce(
        (text, [name, value]) => text.replace(new RegExp(`^${name}=.*$`, 'm'), `${name}=${value}`),
        script.replace('TOLLGATE=http://localhost:8080', `TOLLGATE=${url}`),
      ),
    ],
    {
      timeout: 30_000,
      env: { ...process.env, ROOT_TOKEN },
    },
  );

function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/** A demo backend (scripts/demo-backend.mjs) named `name` on a free port: its process and URL. */
async function demoBackend(name: string): Promise<{ process: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'scripts/demo-backend.mjs')], {
    env: { PORT: String(port), BACKEND_NAME: name },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((r) => child.stdout!.once('data', r));
  return { process: child, url: `http://127.0.0.1:${port}` };
}

describe('the walk-throughs of the README and the guides', () => {
  const backends: Record<string, { process: ChildProcess; url: string }> = {};
  let tollgate: Tollgate;

  beforeAll(async () => {
    for (const name of ['demo', 'search', 'lookup']) backends[name] = await demoBackend(name);
    tollgate = await startTollgate({
      ROOT_TOKEN,
      UPSTREAM_URL: backends.demo!.url,
    });
  });

  afterAll(async () => {
    await tollgate?.stop();
    for (const backend of Object.values(backends)) backend.process.kill();
  });

  it('finds the marked blocks where a reader looks for them, and none that is not run below', () => {
    expect(Object.fromEntries([...BLOCKS].map(([name, { file }]) => [name, file]))).toEqual({
      walkthrough: 'README.md',
      lifecycle: 'docs/guides/keys.md',
      admin: 'docs/guides/admin-tokens-and-audit.md',
      routes: 'docs/guides/routes.md',
      webhooks: 'docs/guides/webhooks.md',
      verify: 'docs/guides/verify-and-client.md',
    });
  });

  it('README: creates a key and a plan, binds them, proxies, hits 429 and reads usage', async () => {
    // The plan is per minute: start early in a minute so the four calls share one window.
    const second = new Date().getUTCSeconds();
    if (second > 45) await new Promise((r) => setTimeout(r, (61 - second) * 1000));

    const { stdout } = await run(walkthrough('walkthrough'), tollgate.url);

    expect(stdout).toMatch(/"secret":"tg_[A-Za-z0-9_-]{43}"/);
    expect(stdout).toContain('"rateLimitId":"free-tier"');
    expect(stdout.match(/"backend":"demo"/g)).toHaveLength(3);
    expect(stdout).toMatch(/HTTP\/1\.1 429 Too Many Requests/);
    expect(stdout).toMatch(/retry-after: \d+/i);
    expect(stdout).toMatch(/ratelimit-policy: "minute";q=3;w=60/i);
    const detail = JSON.parse(stdout.trim().split('\n').at(-1)!) as { usage: Record<string, unknown> };
    expect(detail.usage).toMatchObject({
      totalRequests: 4,
      successfulRequests: 3,
      failedRequests: 1,
      // The 429 charged nothing.
      cost: 3,
      rateLimits: { limit: 3, remaining: 0 },
      usageByCustomer: [{ customerId: 'acme', requests: 3, successful: 3, failed: 0 }],
    });
  });

  it('keys.md: disables, enables, rolls with a grace period and lets a trial key expire', async () => {
    const { stdout } = await run(walkthrough('lifecycle'), tollgate.url);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/"externalId":"cus_42".*"metadata":\{"tier":"trial"\}/);
    expect(lines).toEqual([
      expect.any(String),
      expect.stringContaining('"enabled":false'),
      '403',
      expect.stringContaining('"enabled":true'),
      '200',
      expect.stringMatching(
        /^\{"consumerApiKeyId":"key_[^"]+","secret":"tg_[^"]+","previousSecretExpiresAt":"[^"]+"\}$/,
      ),
      'old secret: 200',
      'new secret: 200',
      '{"error":"The API key has expired","code":"key_expired"}',
    ]);
  });

  it('admin-tokens-and-audit.md: gives CI a token that creates keys and nothing else, records what it did, and revokes it', async () => {
    const { stdout } = await run(walkthrough('admin'), tollgate.url);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      /^\{"id":"tok_[^"]+","name":"ci-deploy","scopes":\["keys:write"\],"expiresAt":null,"createdAt":"[^"]+","secret":"tga_[^"]+"\}$/,
    );
    expect(lines[1]).toBe('201');
    expect(JSON.parse(lines[2]!)).toMatchObject({ code: 'insufficient_scope' });
    const audit = JSON.parse(lines[3]!) as {
      auditLog: { action: string; actor: { name: string }; changes: { after: { name: string } } }[];
    };
    expect(audit.auditLog).toEqual([
      expect.objectContaining({
        action: 'key.create',
        actor: expect.objectContaining({ name: 'ci-deploy' }),
        changes: { before: null, after: expect.objectContaining({ name: 'staging-app' }) },
      }),
    ]);
    expect(JSON.parse(lines[4]!)).toMatchObject({ message: expect.any(String) });
    expect(lines[5]).toBe('401');
  });

  it('routes.md: sends each request to the backend of its route, stripped where the route says, the rest to the catch-all', async () => {
    const { stdout } = await run(walkthrough('routes'), tollgate.url, {
      SEARCH_BACKEND: backends.search!.url,
      LOOKUP_BACKEND: backends.lookup!.url,
    });
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({
      routeId: 'search',
      match: { host: null, pathPrefix: '/v1/search', methods: null },
      stripPrefix: true,
      timeoutMs: null,
    });
    expect(lines[1]).toMatchObject({
      routeId: 'lookup',
      match: { pathPrefix: '/v1/lookup', methods: ['GET', 'HEAD'] },
      timeoutMs: 2000,
    });
    expect(lines.slice(2, 6)).toEqual([
      expect.objectContaining({
        backend: 'search',
        method: 'GET',
        url: '/items?q=tea',
        apiKeyReceived: true,
      }),
      expect.objectContaining({ backend: 'lookup', method: 'GET', url: '/v1/lookup/42' }),
      expect.objectContaining({ backend: 'demo', method: 'POST', url: '/v1/lookup/42' }),
      expect.objectContaining({ backend: 'demo', method: 'GET', url: '/v1/weather?city=Oslo' }),
    ]);
    expect((lines[6] as { routes: { routeId: string }[] }).routes.map((r) => r.routeId)).toEqual([
      'search',
      'lookup',
    ]);
    expect(lines[7]).toEqual({ routeId: 'search', message: 'Route search has been deleted' });
    expect(lines[8]).toMatchObject({ backend: 'demo', url: '/v1/search/items?q=tea' });
  });

  it('verify-and-client.md: a token that may only verify decides two requests, refuses the third and an unknown key', async () => {
    // The plan is per minute: start early in a minute so the three calls share one window.
    const second = new Date().getUTCSeconds();
    if (second > 45) await new Promise((r) => setTimeout(r, (61 - second) * 1000));

    const { stdout } = await run(walkthrough('verify'), tollgate.url);
    const answers = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const key = {
      consumerApiKeyId: expect.stringMatching(/^key_/),
      consumerId: null,
      name: 'acme weather',
      externalId: null,
      metadata: { tier: 'pro' },
    };
    const minute = (remaining: number) => [
      {
        name: 'minute',
        limit: 2,
        period: 'minute',
        remaining,
        resetTime: expect.any(String),
        scope: 'key',
        algorithm: 'fixed',
      },
    ];
    expect(answers).toEqual([
      { valid: true, code: 'ok', ...key, limits: minute(1), cost: 1 },
      { valid: true, code: 'ok', ...key, limits: minute(0), cost: 1 },
      {
        valid: false,
        code: 'rate_limit_exceeded',
        ...key,
        limits: minute(0),
        resetTime: expect.stringMatching(/:00Z$/),
        retryAfterSeconds: expect.any(Number),
      },
      { valid: false, code: 'invalid_api_key', limits: [] },
    ]);
  });

  it('webhooks.md: a webhook for key.created, the demo receiver verifying the signed delivery, and the delivery log', async () => {
    const { stdout } = await run(walkthrough('webhooks'), tollgate.url, {
      RECEIVER_PORT: String(await freePort()),
    });
    const lines = stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      id: expect.stringMatching(/^whk_/),
      events: ['key.created'],
      secret: expect.stringMatching(/^whsec_/),
    });
    expect(stdout).toMatch(
      /^demo webhook receiver on http:\/\/127\.0\.0\.1:\d+, verifying with WEBHOOK_SECRET$/m,
    );
    const id = /^ {2}webhook-id: (evt_[A-Za-z0-9_-]{22})$/m.exec(stdout)?.[1];
    expect(stdout).toMatch(/^ {2}webhook-signature: v1,[A-Za-z0-9+/]{43}=$/m);
    expect(stdout).toMatch(
      /^ {2}\{"type":"key\.created","timestamp":"[^"]+","data":\{"consumerApiKeyId":"key_[^"]+","name":"webhook-demo",.*"externalId":"cus_42"/m,
    );
    expect(stdout).toContain(`  verified key.created, handled ${id}`);
    const log = JSON.parse(lines.at(-1)!) as { deliveries: unknown[] };
    expect(log.deliveries).toEqual([
      expect.objectContaining({
        eventId: id,
        type: 'key.created',
        state: 'delivered',
        attempts: 1,
        lastStatus: 204,
      }),
    ]);
  });
});
