/** The README's walk-throughs, run as written against the built server and the demo backend. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startTollgate, type Tollgate } from './helpers/tollgate.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** The shell block between `<!-- name:start -->` and `<!-- name:end -->`. */
function walkthrough(name = 'walkthrough'): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = new RegExp(`<!-- ${name}:start -->\\s*\`\`\`sh\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${name}:end -->`).exec(readme);
  if (!block) throw new Error(`README.md has no ${name} block`);
  return block[1]!;
}

/** A random root token, as the README has the reader make one; the blocks read it from the environment. */
const ROOT_TOKEN = randomBytes(32).toString('hex');

const run = (script: string, url: string) =>
  promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script.replace('TOLLGATE=http://localhost:8080', `TOLLGATE=${url}`)], {
    timeout: 30_000,
    env: { ...process.env, ROOT_TOKEN },
  });

function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

describe('README walk-through', () => {
  let backend: ChildProcess;
  let tollgate: Tollgate;

  beforeAll(async () => {
    const backendPort = await freePort();
    backend = spawn(process.execPath, [join(ROOT, 'scripts/demo-backend.mjs')], {
      env: { PORT: String(backendPort) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise((r) => backend.stdout!.once('data', r));
    tollgate = await startTollgate({
      ROOT_TOKEN,
      UPSTREAM_URL: `http://127.0.0.1:${backendPort}`,
    });
  });

  afterAll(async () => {
    await tollgate?.stop();
    backend?.kill();
  });

  it('creates a key and a plan, binds them, proxies, hits 429 and reads usage', async () => {
    // The plan is per minute: start early in a minute so the four calls share one window.
    const second = new Date().getUTCSeconds();
    if (second > 45) await new Promise((r) => setTimeout(r, (61 - second) * 1000));

    const { stdout } = await run(walkthrough(), tollgate.url);

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
      rateLimits: { limit: 3, remaining: 0 },
      usageByCustomer: [{ customerId: 'acme', requests: 3, successful: 3, failed: 0 }],
    });
  });

  it('disables, enables, rolls with a grace period and lets a trial key expire', async () => {
    const { stdout } = await run(walkthrough('lifecycle'), tollgate.url);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/"externalId":"cus_42".*"metadata":\{"tier":"trial"\}/);
    expect(lines).toEqual([
      expect.any(String),
      expect.stringContaining('"enabled":false'),
      '403',
      expect.stringContaining('"enabled":true'),
      '200',
      expect.stringMatching(/^\{"consumerApiKeyId":"key_[^"]+","secret":"tg_[^"]+","previousSecretExpiresAt":"[^"]+"\}$/),
      'old secret: 200',
      'new secret: 200',
      '{"error":"The API key has expired","code":"key_expired"}',
    ]);
  });

  it('gives CI a token that creates keys and nothing else, records what it did, and revokes it', async () => {
    const { stdout } = await run(walkthrough('admin'), tollgate.url);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^\{"id":"tok_[^"]+","name":"ci-deploy","scopes":\["keys:write"\],"expiresAt":null,"createdAt":"[^"]+","secret":"tga_[^"]+"\}$/);
    expect(lines[1]).toBe('201');
    expect(JSON.parse(lines[2]!)).toMatchObject({ code: 'insufficient_scope' });
    const audit = JSON.parse(lines[3]!) as { auditLog: { action: string; actor: { name: string }; changes: { after: { name: string } } }[] };
    expect(audit.auditLog).toEqual([expect.objectContaining({ action: 'key.create', actor: expect.objectContaining({ name: 'ci-deploy' }), changes: { before: null, after: expect.objectContaining({ name: 'staging-app' }) } })]);
    expect(JSON.parse(lines[4]!)).toMatchObject({ message: expect.any(String) });
    expect(lines[5]).toBe('401');
  });
});
