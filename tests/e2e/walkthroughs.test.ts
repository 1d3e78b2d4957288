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
import { DAY_MS, HOUR_MS, MINUTE_MS, TestClock } from '../helpers/test-clock.js';

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

/** How long a block may run (`run`'s timeout). */
const BLOCK_TIMEOUT_MS = 30_000;

/**
 * Moves `clock` to just past the end of the UTC minute, hour, day or month it reads when less than a
 * block's run is left of it, so that a block's requests and the window or period it reads them back in
 * (a limit per minute, this month's usage) are one. A move is at most 30 s: the few a file makes keep
 * its clock within the 5 minutes the webhook receiver allows a delivery's timestamp (webhooks.md).
 */
function awayFromTheEndOf(clock: TestClock, period: keyof typeof PERIOD_MS | 'month'): void {
  const now = new Date(clock.now());
  const end =
    period === 'month'
      ? Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)
      : (Math.floor(now.getTime() / PERIOD_MS[period]) + 1) * PERIOD_MS[period];
  const left = end - now.getTime();
  if (left < BLOCK_TIMEOUT_MS) clock.advance(left + 100);
}
const PERIOD_MS = { minute: MINUTE_MS, hour: HOUR_MS, day: DAY_MS };

/** GNU date on a test clock (its TEST_CLOCK_FILE), first in a block's PATH: see the script. */
const TEST_CLOCK_DATE = join(import.meta.dirname, 'helpers/test-clock-date');

/** The JSON objects among a block's output lines, in order. */
const jsonLines = (stdout: string): Record<string, unknown>[] =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

interface Bucket {
  readonly requests: number;
  readonly rateLimited: number;
}
const requestsIn = (buckets: readonly Bucket[]) => buckets.reduce((sum, b) => sum + b.requests, 0);

/** A random root token, as the README has the reader make one; the blocks read it from the environment. */
const ROOT_TOKEN = randomBytes(32).toString('hex');

/**
 * Runs a block against `url`, whose clock is `clock` (the block's `date` reads it too); `settings`
 * replaces other `NAME=value` lines of the block (a free port); `env` is the environment it runs in.
 */
const run = (
  script: string,
  url: string,
  clock: TestClock,
  settings: Record<string, string> = {},
  env: NodeJS.ProcessEnv = process.env,
) =>
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
      timeout: BLOCK_TIMEOUT_MS,
      env: { ...env, ROOT_TOKEN, ...clock.env, PATH: `${TEST_CLOCK_DATE}:${process.env.PATH}` },
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
  const clock = new TestClock();

  beforeAll(async () => {
    for (const name of ['demo', 'search', 'lookup']) backends[name] = await demoBackend(name);
    tollgate = await startTollgate({
      ROOT_TOKEN,
      UPSTREAM_URL: backends.demo!.url,
      ...clock.env,
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
      credits: 'docs/guides/credits.md',
      consumers: 'docs/guides/consumers.md',
      plans: 'docs/guides/plans.md',
      usage: 'docs/guides/usage-and-billing.md',
      verify: 'docs/guides/verify-and-client.md',
      portal: 'docs/guides/portal.md',
      browser: 'docs/guides/browser.md',
      tracing: 'docs/guides/tracing.md',
      leaks: 'docs/guides/leaked-keys.md',
    });
  });

  it('browser.md: a CORS route, a key for one page, a limit per visitor and a token minted in shell', async () => {
    // A Tollgate and a clock of its own: the block's route takes every path under /v1, which the other
    // blocks call.
    const ownClock = new TestClock();
    const own = await startTollgate({ ROOT_TOKEN, UPSTREAM_URL: backends.demo!.url, ...ownClock.env });
    // Four calls in one minute's window of the limit per visitor.
    ownClock.after(MINUTE_MS, 100);
    const { stdout } = await run(walkthrough('browser'), own.url, ownClock, {
      BACKEND: backends.demo!.url,
    }).finally(() => own.stop());
    const lines = stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      routeId: 'web',
      cors: { allowedOrigins: ['https://app.example.com'] },
    });
    expect(JSON.parse(lines[1]!)).toMatchObject({ rateLimitId: 'web-page' });
    expect(lines.slice(2, 7)).toEqual([
      '204 https://app.example.com',
      '200 https://app.example.com',
      '200 https://app.example.com',
      '200 https://app.example.com',
      '429 https://app.example.com',
    ]);
    expect(JSON.parse(lines[7]!)).toMatchObject({ code: 'origin_not_allowed' });
    // Alice's token: her own count, and the backend got the key itself.
    expect(JSON.parse(lines[8]!)).toMatchObject({ backend: 'demo', url: '/v1/items', apiKeyReceived: true });
  });

  it('portal.md: turns the portal on, brands it and sends a customer a sign-in link in five commands', async () => {
    const { stdout } = await run(walkthrough('portal'), tollgate.url, clock);
    const lines = stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      enabled: true,
      title: 'Globex API',
      accentColor: '#0b5fff',
      logoUrl: 'https://globex.example/logo.svg',
      supportUrl: 'https://globex.example/support',
    });
    // The link signed the user in: a 303 to the portal with the session cookie.
    expect(lines[1]).toMatch(/^HTTP\/1\.1 303/);
    expect(lines.slice(2, 4).sort()).toEqual([
      expect.stringMatching(/^location: \/tollgate\/portal\/\s*$/i),
      expect.stringMatching(
        /^set-cookie: tollgate_portal=tgp_[A-Za-z0-9_-]{43}; Path=\/tollgate\/portal; Max-Age=28800; HttpOnly; SameSite=Lax\s*$/i,
      ),
    ]);
    const { sessions } = JSON.parse(lines[4]!) as { sessions: Record<string, unknown>[] };
    expect(sessions).toEqual([
      expect.objectContaining({ signedIn: true, user: { id: 'user_17', email: 'peter@initech.example' } }),
    ]);
  });

  it('README: creates a key and a plan, binds them, proxies, hits 429 and reads usage', async () => {
    // The plan is per minute: the four calls and the usage read 2 s later share one window.
    awayFromTheEndOf(clock, 'minute');
    const { stdout } = await run(walkthrough('walkthrough'), tollgate.url, clock);

    expect(stdout).toMatch(/"secret":"tg_[0-9A-Za-z]{36}"/);
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
    const { stdout } = await run(walkthrough('lifecycle'), tollgate.url, clock);
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

  it('leaked-keys.md: a checksummed secret, a typo refused on its checksum, a leak reported and the key disabled', async () => {
    const { stdout } = await run(walkthrough('leaks'), tollgate.url, clock);
    const lines = stdout.trim().split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'a checksummed secret',
      '200',
      '{"error":"The API key is not valid","code":"invalid_api_key"}',
    ]);
    expect(JSON.parse(lines[3]!)).toEqual([
      {
        token_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        token_type: 'tollgate_api_key',
        label: 'true_positive',
      },
    ]);
    expect(lines[4]).toBe('403');
    expect(lines[5]).toMatch(
      /^enabled: false, leak: \{"at":"[^"]+","source":"gitleaks in CI","url":null,"action":"disable"\}$/,
    );
  });

  it('admin-tokens-and-audit.md: gives CI a token that creates keys and nothing else, records what it did, and revokes it', async () => {
    const { stdout } = await run(walkthrough('admin'), tollgate.url, clock);
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

  it('routes.md: sends each request to the backend of its route, stripped where the route says, the rest to the catch-all, and counts usage by route', async () => {
    const { stdout } = await run(walkthrough('routes'), tollgate.url, clock, {
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
    // Usage by route: the catch-all took three, each route one; the deleted route keeps its series.
    const series = (lines[9] as { series: { routeId: string | null; buckets: { requests: number }[] }[] })
      .series;
    expect(series.map((s) => [s.routeId, s.buckets.reduce((n, b) => n + b.requests, 0)])).toEqual([
      [null, 3],
      ['lookup', 1],
      ['search', 1],
    ]);
  });

  it("credits.md: a consumer's monthly balance spent by a search at 5 and a lookup at 1, refused with 429 credits_exhausted until the refill on the 15th, topped up", async () => {
    // The refill comes at the start of a day: none while the block runs.
    awayFromTheEndOf(clock, 'day');
    const { stdout } = await run(walkthrough('credits'), tollgate.url, clock);
    const lines = stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      rateLimitId: 'pay-per-call',
      costs: [
        { match: { pathPrefix: '/v1/search' }, cost: 5 },
        { match: { pathPrefix: '/v1/lookup' }, cost: 1 },
      ],
    });
    const refill = { amount: 1000, interval: 'month', dayOfMonth: 15 };
    const consumer = JSON.parse(lines[1]!) as { consumerId: string };
    expect(consumer).toMatchObject({ name: 'Acme', credits: { remaining: 1000, refill, lowAt: null } });
    // Forwarded (to the demo backend, or to the lookup backend after routes.md's walk-through).
    expect(lines.slice(2, 4).map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({ url: '/v1/search?q=tea', apiKeyReceived: true }),
      expect.objectContaining({ url: '/v1/lookup/42', apiKeyReceived: true }),
    ]);
    expect(JSON.parse(lines[4]!)).toEqual({ credits: { remaining: 994, refill, lowAt: null } });
    expect(JSON.parse(lines[5]!)).toEqual({ consumerId: consumer.consumerId, remaining: 3 });

    // The refusal: the balance's next refill, the 15th at 00:00 UTC, and Retry-After until it.
    const now = new Date(clock.now());
    let refillAt = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 15);
    if (refillAt <= now.getTime()) refillAt = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 15);
    expect(stdout).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r?$/m);
    const retryAfter = Number(/^retry-after: (\d+)\r?$/im.exec(stdout)?.[1]);
    expect(Math.abs(retryAfter - (refillAt - now.getTime()) / 1000)).toBeLessThan(60);
    expect(JSON.parse(/^\{"error".*$/m.exec(stdout)![0])).toEqual({
      error: 'The credit balance does not hold the cost of this request',
      code: 'credits_exhausted',
      remaining: 3,
      cost: 5,
      scope: 'consumer',
      resetTime: new Date(refillAt).toISOString().slice(0, 19) + 'Z',
    });
    expect(lines.slice(-3)).toEqual([
      'lookup: 200',
      JSON.stringify({ consumerId: consumer.consumerId, remaining: 502 }),
      'search: 200',
    ]);
  });

  it('verify-and-client.md: a token that may only verify decides two requests, refuses the third and an unknown key', async () => {
    // The plan is per minute: the three calls share one window.
    awayFromTheEndOf(clock, 'minute');
    const { stdout } = await run(walkthrough('verify'), tollgate.url, clock);
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
        per: 'key',
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

  it('webhooks.md: a webhook for quota.threshold, a key driven past 80 % of its hourly limit, the demo receiver verifying the signed delivery, and the delivery log', async () => {
    // Eight calls in one hour's window, the one the clock reads when the block has run.
    awayFromTheEndOf(clock, 'hour');

    const { stdout } = await run(walkthrough('webhooks'), tollgate.url, clock, {
      RECEIVER_PORT: String(await freePort()),
    });
    const lines = stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      id: expect.stringMatching(/^whk_/),
      events: ['quota.threshold'],
      secret: expect.stringMatching(/^whsec_/),
    });
    expect(stdout).toMatch(
      /^demo webhook receiver on http:\/\/127\.0\.0\.1:\d+, verifying with WEBHOOK_SECRET$/m,
    );
    expect(stdout).toMatch(/^200 200 200 200 200 200 200 200 $/m);
    const id = /^ {2}webhook-id: (evt_[A-Za-z0-9_-]{22})$/m.exec(stdout)?.[1];
    expect(stdout).toMatch(/^ {2}webhook-signature: v1,[A-Za-z0-9+/]{43}=$/m);
    const body = /^ {2}(\{"type":"quota\.threshold".*)$/m.exec(stdout)?.[1];
    const hour = Math.floor(clock.now() / HOUR_MS) * HOUR_MS;
    expect(JSON.parse(body!)).toEqual({
      type: 'quota.threshold',
      timestamp: expect.any(String),
      data: {
        consumerApiKeyId: expect.stringMatching(/^key_/),
        scope: 'key',
        limit: { name: 'hour', period: 'hour', limit: 10, algorithm: 'fixed' },
        window: {
          start: new Date(hour).toISOString().slice(0, 19) + 'Z',
          end: new Date(hour + HOUR_MS).toISOString().slice(0, 19) + 'Z',
        },
        threshold: 80,
      },
    });
    expect(stdout).toContain(`  verified quota.threshold, handled ${id}`);
    const log = JSON.parse(lines.at(-1)!) as { deliveries: unknown[] };
    expect(log.deliveries).toEqual([
      expect.objectContaining({
        eventId: id,
        type: 'quota.threshold',
        state: 'delivered',
        attempts: 1,
        lastStatus: 204,
      }),
    ]);
  });

  it('consumers.md: two keys of one account share its monthly quota, and its usage counts both', async () => {
    // A monthly quota: the six calls and the usage read after them in one month.
    awayFromTheEndOf(clock, 'month');
    const { stdout } = await run(walkthrough('consumers'), tollgate.url, clock);
    const [plan, consumer, refusal, detail, overTime] = jsonLines(stdout);
    expect(plan).toMatchObject({
      rateLimitId: 'acme-monthly',
      limits: [{ name: 'quota', limit: 5, period: 'month' }],
    });
    expect(consumer).toMatchObject({
      consumerId: expect.stringMatching(/^con_/),
      name: 'Acme',
      externalId: 'acct_acme',
      rateLimitId: 'acme-monthly',
      keyCount: 0,
    });
    // Three calls with the production key and two with the staging key pass; the sixth is refused.
    expect(stdout.split('\n')[2]!.trim()).toBe('200 200 200 200 200');
    expect(stdout).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r?$/m);
    expect(stdout).toMatch(/^ratelimit-policy: "consumer\.quota";q=5;w=\d+\r?$/im);
    expect(stdout).toMatch(/^retry-after: \d+\r?$/im);
    expect(refusal).toMatchObject({
      code: 'rate_limit_exceeded',
      limit: 5,
      period: 'month',
      remaining: 0,
      name: 'consumer.quota',
      scope: 'consumer',
    });
    expect(detail).toMatchObject({
      consumerId: consumer!.consumerId,
      keyCount: 2,
      usage: {
        totalRequests: 6,
        successfulRequests: 5,
        failedRequests: 1,
        endpoints: [{ endpoint: '/v1/orders', requests: 6, successful: 5, failed: 1 }],
        rateLimits: {
          limit: 5,
          remaining: 0,
          limits: [{ name: 'consumer.quota', limit: 5, period: 'month', remaining: 0, scope: 'consumer' }],
        },
      },
    });
    const usage = overTime as {
      granularity: string;
      buckets: Bucket[];
      series: { endpoint: string; buckets: Bucket[] }[];
    };
    expect(usage.granularity).toBe('day');
    expect(requestsIn(usage.buckets)).toBe(6);
    expect(usage.buckets.reduce((sum, b) => sum + b.rateLimited, 0)).toBe(1);
    expect(usage.series.map((s) => [s.endpoint, requestsIn(s.buckets)])).toEqual([['/v1/orders', 6]]);
  });

  it('plans.md: a plan of a burst limit and a monthly quota reports both, and the burst limit refuses the eleventh call of a second', async () => {
    // The burst limit's second is the one the block's `date` waits for; the monthly quota's calls in one month.
    awayFromTheEndOf(clock, 'month');
    const { stdout } = await run(walkthrough('plans'), tollgate.url, clock);
    const [plan] = jsonLines(stdout);
    expect(plan).toMatchObject({
      rateLimitId: 'pro',
      limits: [
        { name: 'burst', limit: 10, period: 'second', algorithm: 'fixed' },
        { name: 'monthly', limit: 10000, period: 'month', algorithm: 'fixed' },
      ],
    });
    expect(stdout).toMatch(/^ratelimit-policy: "burst";q=10;w=1, "monthly";q=10000;w=\d+\r?$/im);
    expect(stdout).toMatch(/^ratelimit: "burst";r=9;t=1\r?$/im);
    const calls = stdout.split('\n').filter((line) => /^\d{3} /.test(line));
    expect(calls).toEqual([
      ...[9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((left) => `200 "burst";r=${left};t=1`),
      '429 "burst";r=0;t=1',
    ]);
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toMatchObject({
      code: 'rate_limit_exceeded',
      limit: 10,
      period: 'second',
      remaining: 0,
      name: 'burst',
      scope: 'key',
    });
  });

  it("usage-and-billing.md: a key's month by day and by customer as CSV, by endpoint as JSON, and the fleet's busiest keys", async () => {
    // The four calls on one day, this one, in the month the block's `date` names.
    awayFromTheEndOf(clock, 'day');
    const { stdout } = await run(walkthrough('usage'), tollgate.url, clock);
    const [byDay, byCustomer] = stdout
      .split(/^(?=start,)/m)
      .map((csv) => csv.split('\n').filter((line) => /^\d{4}-/.test(line)));
    const now = new Date(clock.now());
    const daysInMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).getUTCDate();
    expect(byDay).toHaveLength(daysInMonth);
    // Every day present, each with the header's 23 columns (an empty bucket's percentiles left empty).
    expect(new Set(byDay!.map((row) => row.split(',').length))).toEqual(new Set([23]));
    const requestsByDay = byDay!.map((row) => Number(row.split(',')[1]));
    expect(requestsByDay.reduce((a, b) => a + b, 0)).toBe(4);
    expect(requestsByDay[now.getUTCDate() - 1]).toBe(4);
    expect(byCustomer!.map((row) => row.split(',').slice(1, 3))).toEqual([
      ['"acme"', '3'],
      ['"globex"', '1'],
    ]);
    const [byEndpoint, fleet] = jsonLines(stdout) as [
      { series: { endpoint: string; buckets: Bucket[] }[] },
      { topKeys: { name: string; requests: number }[]; topConsumers: unknown[] },
    ];
    expect(byEndpoint.series.map((s) => [s.endpoint, requestsIn(s.buckets)])).toEqual([
      ['/v1/weather', 3],
      ['/v1/forecast', 1],
    ]);
    expect(fleet.topKeys).toContainEqual(expect.objectContaining({ name: 'invoicing-demo', requests: 4 }));
    expect(Array.isArray(fleet.topConsumers)).toBe(true);
  });

  it("tracing.md: a Tollgate tracing to the demo receiver, a request's SERVER span under its caller's and its CLIENT span the backend was told of", async () => {
    const tracedPort = await freePort();
    // The block starts a Tollgate of its own, embedded as the reader's: not on the run's Redis and Postgres.
    const { stdout } = await run(
      walkthrough('tracing'),
      tollgate.url,
      clock,
      {
        BACKEND: backends.demo!.url,
        COLLECTOR_PORT: String(await freePort()),
        TRACED_PORT: String(tracedPort),
        TRACED_OPS_PORT: String(await freePort()),
      },
      { ...process.env, DATABASE_URL: undefined, REDIS_URL: undefined },
    );
    expect(stdout).toMatch(/^demo trace receiver on http:\/\/127\.0\.0\.1:\d+\/v1\/traces$/m);
    const answer = jsonLines(stdout).find((line) => line.backend === 'demo');
    expect(answer).toMatchObject({ url: '/v1/orders/42?token=never-in-a-span' });
    const sent = /^00-4bf92f3577b34da6a3ce929d0e0e4736-([0-9a-f]{16})-01$/.exec(String(answer!.traceparent));
    expect(sent).not.toBeNull();
    const spanLine = (kind: string) =>
      new RegExp(
        `^${kind} GET  trace=4bf92f3577b34da6a3ce929d0e0e4736 span=([0-9a-f]{16}) parent=([0-9a-f]{16})  .*$`,
        'm',
      ).exec(stdout);
    const server = spanLine('SERVER');
    const client = spanLine('CLIENT');
    expect(server?.[2]).toBe('00f067aa0ba902b7');
    expect(server?.[0]).toContain('  service.name=tollgate-eu  ');
    expect(server?.[0]).toMatch(
      / {2}url\.path=\/v1\/orders\/42 {2}.* {2}tollgate\.key\.id=key_[\w-]+ {2}tollgate\.outcome=ok {2}/,
    );
    expect(server?.[0]).toMatch(/ {2}http\.response\.status_code=200$/);
    expect(client?.[1]).toBe(sent![1]);
    expect(client?.[2]).toBe(server?.[1]);
    expect(client?.[0]).toContain(`  url.full=${backends.demo!.url}/v1/orders/42  `);
    expect(stdout).toMatch(/^SERVER POST \/consumer-api-key\/create {2}/m);
    // Neither the query nor a credential is in any span.
    expect(
      stdout.split('\n').filter((line) => /never-in-a-span|tg_/.test(line) && !line.startsWith('{')),
    ).toEqual([]);
    // The block's Tollgate ended with it.
    await expect(fetch(`http://127.0.0.1:${tracedPort}/`)).rejects.toThrow();
  });
});
