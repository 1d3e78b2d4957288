/**
 * `tollgate apply` and `tollgate export` (docs/guides/configuration-as-code.md) as a user runs them: the
 * built command against the built server, in both modes. An empty service gets the whole file from one
 * apply; a second apply makes no change and writes no audit entry; what a run changes, refuses or stops
 * on is printed, and the exit codes are the guide's.
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { readConfigFile } from '../../packages/client/src/config/apply-config.js';
import { describeChange } from '../../packages/client/src/config/change.js';
import { executeChanges } from '../../packages/client/src/config/execute-changes.js';
import { inOrder } from '../../packages/client/src/config/order-changes.js';
import { planChanges } from '../../packages/client/src/config/plan-changes.js';
import { readState } from '../../packages/client/src/config/read-state.js';
import { createClient } from '../../packages/client/src/management-client.js';
import { MODES, type Deployment } from './helpers/modes.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const ROOT = resolve(import.meta.dirname, '../..');
const COMMAND = join(ROOT, 'packages/client/dist/bin/tollgate.js');
const STRIPE_SECRET = 'sk_test_' + 'c0nfig-as-code-secret';
const OIDC_SECRET = 'oidc-' + 'c0nfig-as-code-client-secret';

const FILE = `# The configuration of a test: every kind a file declares.
routes:
  - routeId: search
    match: { pathPrefix: /v1/search, methods: [GET] }
    upstreamUrl: \${SEARCH_UPSTREAM}
plans:
  - rateLimitId: gold
    description: Paying customers
    limits:
      - { limit: 100, period: minute }
      - { limit: 10000, period: month, name: searches, match: { routeIds: [search] } }
    costs:
      - { match: { pathPrefix: /v1/search }, cost: 5 }
  - rateLimitId: free
    limit: 10
    period: minute
consumers:
  - name: Acme
    externalId: acme
    rateLimitId: gold
    metadata: { tier: gold }
    credits: { remaining: 500, refill: { amount: 500, interval: month } }
  - name: Beta
    externalId: beta
    rateLimitId: free
webhooks:
  - url: http://127.0.0.1:9/hooks
    events: [consumer.created, credits.low]
billingExports:
  - type: stripe
    url: https://api.stripe.example
    credential: \${STRIPE_KEY}
    eventName: api_calls
    interval: hour
    subject: consumer
portal:
  enabled: true
  title: Acme API
  accentColor: "#0055ff"
  supportUrl: https://support.acme.example
  maxKeysPerConsumer: 3
  publicPlans: [free, gold]
  apiReference: { document: { openapi: 3.1.0, info: { title: Acme, version: "1" }, paths: {} } }
  oidc:
    issuer: https://id.acme.example
    clientId: tollgate-portal
    clientSecret: \${PORTAL_SECRET}
    claim: org_id
    match: externalId
`;

/** What a service whose portal was never set holds, as GET /tollgate/portal/settings shows it. */
const PORTAL_DEFAULTS = {
  enabled: false,
  title: 'Developer portal',
  logoUrl: null,
  accentColor: null,
  supportUrl: null,
  maxKeysPerConsumer: 5,
  publicPlans: [],
  apiReference: null,
  oidc: null,
};

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` to its end, with what it printed. */
function runToEnd(command: string, args: readonly string[], options: SpawnOptions): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

/** Runs the installed command as CI would, with only PATH and `env` in its environment. */
const tollgate = (args: readonly string[], env: Record<string, string>): Promise<Run> =>
  runToEnd(process.execPath, [COMMAND, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });

describe.each(MODES)('tollgate apply and export, $name', (mode) => {
  const deployments: Deployment[] = [];
  let service: Tollgate;
  let second: Tollgate;
  let folder: string;
  let file: string;
  let env: Record<string, string>;

  const write = (name: string, text: string) => {
    const path = join(folder, name);
    writeFileSync(path, text);
    return path;
  };
  const auditCount = async (on: Tollgate) =>
    (await on.admin('GET', '/tollgate/audit-log?limit=1000')).body.auditLog.length as number;
  const portal = async (on: Tollgate) => (await on.admin('GET', '/tollgate/portal/settings')).body;
  const consumer = async (on: Tollgate, externalId: string) =>
    (await on.admin('GET', `/tollgate/consumers?externalId=${externalId}`)).body.consumers[0];

  beforeAll(async () => {
    const start = async () => {
      const deployment = await mode.deploy();
      deployments.push(deployment);
      return startTollgate(deployment.env);
    };
    [service, second] = await Promise.all([start(), start()]);
    folder = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    file = write('tollgate.yaml', FILE);
    env = {
      TOLLGATE_URL: service.url,
      TOLLGATE_TOKEN: service.rootToken,
      STRIPE_KEY: STRIPE_SECRET,
      PORTAL_SECRET: OIDC_SECRET,
      SEARCH_UPSTREAM: 'http://127.0.0.1:9/search',
    };
  }, 120_000);

  afterAll(async () => {
    await Promise.all([service?.stop(), second?.stop()]);
    await Promise.all(deployments.map((d) => d.dispose()));
    if (folder) rmSync(folder, { recursive: true, force: true });
  }, 60_000);

  it('serves the schema the command validates with, without a token', async () => {
    const served = await fetch(`${service.url}/tollgate/config-schema.json`);
    expect(served.status).toBe(200);
    expect(await served.json()).toEqual(
      JSON.parse(readFileSync(join(ROOT, 'packages/client/config-schema.json'), 'utf8')),
    );
  });

  it('dry-runs an empty service: every creation listed, exit 2, nothing made', async () => {
    const run = await tollgate(['apply', '-f', file, '--dry-run'], env);
    expect(run).toMatchObject({ code: 2, stderr: '' });
    expect(run.stdout.split('\n').filter((line) => line.startsWith('+ create'))).toEqual([
      '+ create route "search"',
      '+ create plan "gold"',
      '+ create plan "free"',
      '+ create consumer "acme"',
      '+ create consumer "beta"',
      '+ create webhook "http://127.0.0.1:9/hooks"',
      '+ create billing export "stripe api_calls"',
    ]);
    // The portal's settings always exist: they are updated, last, once the plans they offer exist.
    expect(run.stdout.split('\n').slice(-3)).toEqual([
      '~ update portal settings: enabled, title, accentColor, supportUrl, maxKeysPerConsumer, publicPlans, apiReference, oidc',
      '8 change(s) to apply (dry run: none made).',
      '',
    ]);
    expect(run.stdout).not.toContain(OIDC_SECRET);
    expect((await service.admin('GET', '/tollgate/routes')).body.routes).toEqual([]);
    expect(await portal(service)).toMatchObject(PORTAL_DEFAULTS);
    expect(await auditCount(service)).toBe(0);
  });

  it('applies the whole file to an empty service in one run, and a second run changes nothing', async () => {
    const first = await tollgate(['apply', '-f', file], env);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toContain('8 change(s) applied.');
    const route = (await service.admin('GET', '/tollgate/routes/search')).body;
    expect(route.upstreamUrl).toBe('http://127.0.0.1:9/search');
    const gold = (await service.admin('GET', '/rate-limit/gold')).body;
    expect(gold.limits.map((l: { name: string }) => l.name)).toEqual(['minute', 'searches']);
    expect(gold.consumerCount).toBe(1);
    expect(await consumer(service, 'acme')).toMatchObject({
      rateLimitId: 'gold',
      credits: { remaining: 500 },
    });
    const exports = (await service.admin('GET', '/tollgate/billing-exports')).body.billingExports;
    expect(exports).toMatchObject([{ type: 'stripe', hasCredential: true }]);
    expect(await portal(service)).toMatchObject({
      enabled: true,
      title: 'Acme API',
      logoUrl: null,
      publicPlans: ['free', 'gold'],
      apiReference: { document: { openapi: '3.1.0' } },
      oidc: { issuer: 'https://id.acme.example', claim: 'org_id', clientSecretSet: true },
    });
    const audited = await auditCount(service);
    expect(audited).toBe(8);

    const again = await tollgate(['apply', '-f', file], env);
    expect(again).toEqual({ code: 0, stdout: 'No changes.\n', stderr: '' });
    expect(await tollgate(['apply', '-f', file, '--dry-run'], env)).toMatchObject({ code: 0 });
    expect(await auditCount(service)).toBe(audited);
    // The credentials went to the service and nowhere else.
    expect(first.stdout + again.stdout).not.toContain(STRIPE_SECRET);
    expect(first.stdout + again.stdout).not.toContain(OIDC_SECRET);
  });

  it('never gives back spent credits: the balance is set only when it is created', async () => {
    const acme = await consumer(service, 'acme');
    const spent = await service.admin('POST', '/tollgate/credits', { consumerId: acme.consumerId, set: 123 });
    expect(spent.status).toBe(200);
    expect(await tollgate(['apply', '-f', file], env)).toMatchObject({ code: 0, stdout: 'No changes.\n' });
    expect((await consumer(service, 'acme')).credits.remaining).toBe(123);

    // A new refill changes the refill, not what is left.
    const refilled = write('refilled.yaml', FILE.replace('refill: { amount: 500', 'refill: { amount: 900'));
    const run = await tollgate(['apply', '-f', refilled], env);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('~ update consumer "acme": credits');
    expect((await consumer(service, 'acme')).credits).toMatchObject({
      remaining: 123,
      refill: { amount: 900, interval: 'month' },
    });
    expect(await tollgate(['apply', '-f', file], env)).toMatchObject({ code: 0 });
  });

  it('keeps what is spent and topped up while an apply changes a refill, and a retried change adds nothing', async () => {
    const acme = await consumer(service, 'acme');
    const { secret } = (
      await service.admin('POST', '/consumer-api-key/create', {
        name: 'spender',
        consumerId: acme.consumerId,
      })
    ).body as { secret: string };
    const client = createClient({ baseUrl: service.url, token: service.rootToken });
    const refilled = write(
      'refill-race.yaml',
      FILE.replace('refill: { amount: 500', 'refill: { amount: 700'),
    );
    // The apply reads the service and plans its change; the balance moves before the change is made.
    const { config, lineOf } = await readConfigFile(refilled, env);
    const changes = inOrder(
      planChanges(
        config,
        await readState(client),
        { prune: false, force: false, rotateCredentials: false },
        env,
        lineOf,
      ),
    );
    expect(changes.map(describeChange)).toEqual(['~ update consumer "acme": credits']);
    expect(
      (await service.admin('POST', '/tollgate/credits', { consumerId: acme.consumerId, add: 40 })).status,
    ).toBe(200);
    // A proxied request of one of its keys spends the route's cost, 5 (admitted, so charged, though the backend is unreachable).
    const spent = await fetch(`${service.url}/v1/search`, { headers: { authorization: `Bearer ${secret}` } });
    expect(spent.status).toBe(502);
    const moved = (await consumer(service, 'acme')).credits.remaining as number;
    expect(moved).toBe(acme.credits.remaining + 40 - 5);

    const print = { out: () => {}, err: (line: string) => void console.error(line) };
    expect(await executeChanges(changes, client, env, print)).toBe(true);
    expect((await consumer(service, 'acme')).credits).toEqual({
      remaining: moved,
      refill: { amount: 700, interval: 'month', dayOfMonth: 1 },
      lowAt: null,
    });
    // Made again (a retry after a lost answer): nothing more changes, and no audit entry.
    const audited = await auditCount(service);
    expect(await executeChanges(changes, client, env, print)).toBe(true);
    expect((await consumer(service, 'acme')).credits.remaining).toBe(moved);
    expect(await auditCount(service)).toBe(audited);
    expect(await tollgate(['apply', '-f', file], env)).toMatchObject({ code: 0 });
    expect((await consumer(service, 'acme')).credits.remaining).toBe(moved);
  });

  it('sends a credential again only with --rotate-credentials, and needs its variable only then', async () => {
    const withoutSecret = { ...env } as Record<string, string>;
    delete withoutSecret.STRIPE_KEY;
    delete withoutSecret.PORTAL_SECRET;
    expect(await tollgate(['apply', '-f', file], withoutSecret)).toMatchObject({
      code: 0,
      stdout: 'No changes.\n',
    });
    const refused = await tollgate(['apply', '-f', file, '--rotate-credentials'], withoutSecret);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /tollgate\.yaml:\d+: billingExports\[0\]\.credential: \$\{STRIPE_KEY\} is not set/,
    );
    expect(refused.stderr).toMatch(
      /tollgate\.yaml:\d+: portal\.oidc\.clientSecret: \$\{PORTAL_SECRET\} is not set/,
    );
    const before = await auditCount(service);
    const rotated = await tollgate(['apply', '-f', file, '--rotate-credentials'], env);
    expect(rotated).toMatchObject({ code: 0, stderr: '' });
    expect(rotated.stdout).toContain('~ update billing export "stripe api_calls": credential');
    expect(rotated.stdout).toContain('~ update portal settings: oidc');
    expect(rotated.stdout).not.toContain(STRIPE_SECRET);
    expect(rotated.stdout).not.toContain(OIDC_SECRET);
    expect(await auditCount(service)).toBe(before + 2);
  });

  it('keeps the portal settings a file leaves out, and returns them to their defaults with --prune', async () => {
    const retitled = write(
      'retitled.yaml',
      FILE.replace(/portal:[^]*$/, 'portal:\n  title: Acme developers\n  publicPlans: [gold]\n'),
    );
    const kept = await tollgate(['apply', '-f', retitled], env);
    expect(kept).toMatchObject({ code: 0, stderr: '' });
    expect(kept.stdout).toBe('~ update portal settings: title, publicPlans\n1 change(s) applied.\n');
    expect(await portal(service)).toMatchObject({
      enabled: true,
      title: 'Acme developers',
      maxKeysPerConsumer: 3,
      publicPlans: ['gold'],
      oidc: { clientId: 'tollgate-portal', clientSecretSet: true },
    });

    const dryRun = await tollgate(['apply', '-f', retitled, '--prune', '--dry-run'], env);
    expect(dryRun).toMatchObject({
      code: 2,
      stdout:
        '~ update portal settings: enabled, accentColor, supportUrl, maxKeysPerConsumer, apiReference, oidc\n1 change(s) to apply (dry run: none made).\n',
    });
    expect(await tollgate(['apply', '-f', retitled, '--prune'], env)).toMatchObject({ code: 0, stderr: '' });
    expect(await portal(service)).toMatchObject({
      ...PORTAL_DEFAULTS,
      title: 'Acme developers',
      publicPlans: ['gold'],
    });

    // The whole section back: OIDC is set anew, so its client secret is sent again.
    const restored = await tollgate(['apply', '-f', file], env);
    expect(restored).toMatchObject({ code: 0, stderr: '' });
    expect(restored.stdout).toContain('~ update portal settings: enabled, title, accentColor');
    expect(restored.stdout).not.toContain(OIDC_SECRET);
    expect((await portal(service)).oidc).toMatchObject({ clientSecretSet: true });
    expect(await tollgate(['apply', '-f', file], env)).toMatchObject({ code: 0, stdout: 'No changes.\n' });
  });

  it('exports a file that applies to a second service with no change left', async () => {
    const exported = await tollgate(['export'], env);
    expect(exported).toMatchObject({ code: 0, stderr: '' });
    expect(exported.stdout).toContain('credential: ${STRIPE_API_CALLS_CREDENTIAL}');
    expect(exported.stdout).not.toContain(STRIPE_SECRET);
    expect(exported.stdout).toContain('clientSecret: ${PORTAL_OIDC_CLIENT_SECRET}');
    expect(exported.stdout).not.toContain(OIDC_SECRET);
    const copy = write('exported.yaml', exported.stdout);
    expect(await tollgate(['apply', '-f', copy], env)).toMatchObject({ code: 0, stdout: 'No changes.\n' });

    const secondEnv = {
      TOLLGATE_URL: second.url,
      TOLLGATE_TOKEN: second.rootToken,
      STRIPE_API_CALLS_CREDENTIAL: STRIPE_SECRET,
      PORTAL_OIDC_CLIENT_SECRET: OIDC_SECRET,
    };
    const applied = await tollgate(['apply', '-f', copy], secondEnv);
    expect(applied).toMatchObject({ code: 0, stderr: '' });
    expect(applied.stdout).toContain('8 change(s) applied.');
    expect(await portal(second)).toMatchObject({ title: 'Acme API', oidc: { clientSecretSet: true } });
    expect(await tollgate(['apply', '-f', copy, '--dry-run'], secondEnv)).toMatchObject({ code: 0 });
    const reexported = await tollgate(['export'], secondEnv);
    const body = (text: string) => text.split('\n').filter((line) => !line.startsWith('#'));
    expect(body(reexported.stdout)).toEqual(body(exported.stdout));
  });

  it('names the file, line and field of each fault, and changes nothing', async () => {
    const bad = write(
      'bad.yaml',
      [
        'plans:',
        '  - rateLimitId: gold',
        '    limit: 100',
        '    period: fortnight',
        'consumers:',
        '  - name: Acme',
        '    externalId: acme',
        '    rateLimitId: platinum',
        '    colour: red',
        '  - name: Nobody',
        '',
      ].join('\n'),
    );
    const before = await auditCount(service);
    const run = await tollgate(['apply', '-f', bad, '--prune'], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${bad}:4: plans[0].period: must be one of`);
    expect(run.stderr).toContain(`${bad}:9: consumers[0].colour: is not a known field`);
    expect(run.stderr).toContain(`${bad}:10: consumers[1].externalId: is required`);
    expect(run.stdout).toBe('');

    const dangling = write(
      'dangling.yaml',
      FILE.replace('rateLimitId: free\nwebhooks', 'rateLimitId: fre\nwebhooks'),
    );
    const refused = await tollgate(['apply', '-f', dangling], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /dangling\.yaml:\d+: consumers\[1\]\.rateLimitId: names no plan \("fre"\)/,
    );

    const badPortal = write(
      'bad-portal.yaml',
      FILE.replace('clientSecret: ${PORTAL_SECRET}', `clientSecret: ${OIDC_SECRET}`),
    );
    const portalRefused = await tollgate(['apply', '-f', badPortal], env);
    expect(portalRefused.code).toBe(1);
    expect(portalRefused.stderr).toMatch(
      /bad-portal\.yaml:\d+: portal\.oidc\.clientSecret: must match pattern/,
    );
    expect(portalRefused.stdout).toBe('');
    expect(portalRefused.stderr).not.toContain(OIDC_SECRET);
    const publicPlan = await tollgate(
      ['apply', '-f', write('public-plan.yaml', FILE.replace('[free, gold]', '[free, platinum]'))],
      env,
    );
    expect(publicPlan.code).toBe(1);
    expect(publicPlan.stderr).toMatch(
      /public-plan\.yaml:\d+: portal\.publicPlans\[1\]: names no plan \("platinum"\)/,
    );

    const missing = { ...env } as Record<string, string>;
    delete missing.SEARCH_UPSTREAM;
    const noVariable = await tollgate(['apply', '-f', file], missing);
    expect(noVariable.code).toBe(1);
    expect(noVariable.stderr).toContain(`${file}:5: routes[0].upstreamUrl: \${SEARCH_UPSTREAM} is not set`);
    expect(await auditCount(service)).toBe(before);
  });

  it('stops at a call that fails and says what was applied and what was not', async () => {
    // A plan id the API keeps for its own path: the file's checks take it, the API refuses it.
    const failing = write(
      'failing.yaml',
      FILE.replace(
        '  - rateLimitId: free',
        '  - rateLimitId: create\n    limit: 1\n    period: day\n  - rateLimitId: free',
      )
        .replace('upstreamUrl: ${SEARCH_UPSTREAM}', 'upstreamUrl: ${SEARCH_UPSTREAM}\n    timeoutMs: 5000')
        .replace('  - name: Beta', '  - name: Gamma\n    externalId: gamma\n  - name: Beta'),
    );
    const run = await tollgate(['apply', '-f', failing], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('failed: + create plan "create": 400 validation_failed');
    expect(run.stderr).toContain('stopped: 1 of 3 change(s) applied.');
    expect(run.stderr).toContain('  applied: ~ update route "search": timeoutMs');
    expect(run.stderr).toContain('  not applied: + create plan "create"');
    expect(run.stderr).toContain('  not applied: + create consumer "gamma"');
    expect(run.stdout).toBe('~ update route "search": timeoutMs\n');
    expect((await service.admin('GET', '/tollgate/routes/search')).body.timeoutMs).toBe(5000);
    expect(await consumer(service, 'gamma')).toBeUndefined();
  });

  it('prunes: refuses before any change while keys use what it would delete, deletes it with --force', async () => {
    const small = write('small.yaml', 'plans:\n  - rateLimitId: free\n    limit: 10\n    period: minute\n');
    const beta = await consumer(service, 'beta');
    const key = await service.admin('POST', '/consumer-api-key/create', {
      name: 'beta-prod',
      consumerId: beta.consumerId,
    });
    const keyOnGold = await service.admin('POST', '/consumer-api-key/create', { name: 'gold-key' });
    await service.admin('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: keyOnGold.body.id,
      rateLimitId: 'gold',
    });
    const before = await auditCount(service);

    const refused = await tollgate(['apply', '-f', small, '--prune'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Nothing changed: --prune would delete what is in use');
    expect(refused.stderr).toContain('consumer "beta": 1 key(s) belong to it');
    expect(refused.stderr).toContain('plan "gold": 1 key(s) and 0 consumer(s) use it');
    expect(refused.stdout).toBe('');
    expect(await auditCount(service)).toBe(before);

    // Without --prune, what the file does not name is left alone.
    expect(await tollgate(['apply', '-f', small], env)).toMatchObject({ code: 0, stdout: 'No changes.\n' });

    const dryRun = await tollgate(['apply', '-f', small, '--prune', '--force', '--dry-run'], env);
    expect(dryRun.code).toBe(2);
    const forced = await tollgate(['apply', '-f', small, '--prune', '--force'], env);
    expect(forced).toMatchObject({ code: 0, stderr: '' });
    expect(forced.stdout.trim().split('\n')).toEqual([
      ...dryRun.stdout.trim().split('\n').slice(0, -1),
      expect.stringContaining('change(s) applied'),
    ]);
    expect(forced.stdout).toContain('- delete consumer "beta": force');
    expect(forced.stdout).toContain('- delete plan "gold": force');
    // A file without a portal section, pruned: the portal returns to a fresh service's settings (off).
    expect(forced.stdout).toContain('~ update portal settings: enabled, title');
    expect(await portal(service)).toMatchObject(PORTAL_DEFAULTS);
    expect((await service.admin('GET', '/tollgate/routes')).body.routes).toEqual([]);
    expect((await service.admin('GET', '/tollgate/billing-exports')).body.billingExports).toEqual([]);
    // The keys keep working, alone.
    const detail = (await service.admin('GET', `/consumer-api-key/${key.body.id}`)).body;
    expect(detail).toMatchObject({ consumerApiKeyId: key.body.id, consumerId: null });
    expect(await tollgate(['apply', '-f', small, '--prune'], env)).toMatchObject({
      code: 0,
      stdout: 'No changes.\n',
    });
  });

  it("never prints a reference's value: a fault names the ${VAR}", async () => {
    const leaky = 'sk_test_' + 'leaked-through-a-plan-id';
    const dangling = write(
      'leaky.yaml',
      'consumers:\n  - name: Leaky\n    externalId: leaky\n    rateLimitId: ${LEAKY_PLAN}\n',
    );
    const run = await tollgate(['apply', '-f', dangling, '--dry-run'], { ...env, LEAKY_PLAN: leaky });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${dangling}:4: consumers[0].rateLimitId: names no plan ("\${LEAKY_PLAN}")`);
    expect(run.stdout + run.stderr).not.toContain(leaky);
  });

  it('settles a path escape and a host in capitals: the second apply changes nothing', async () => {
    const escapes = write(
      'escapes.yaml',
      [
        'routes:',
        '  - routeId: tilde',
        '    match: { pathPrefix: /v1/%7Euser, host: API.Example.COM }',
        '    upstreamUrl: http://127.0.0.1:9/',
        'plans:',
        '  - rateLimitId: escapes',
        '    limits: [{ limit: 5, period: hour, match: { pathPrefix: /v1/%7euser } }]',
        '',
      ].join('\n'),
    );
    expect(await tollgate(['apply', '-f', escapes], env)).toMatchObject({ code: 0, stderr: '' });
    expect((await service.admin('GET', '/tollgate/routes/tilde')).body.match).toMatchObject({
      pathPrefix: '/v1/~user',
      host: 'api.example.com',
    });
    const audited = await auditCount(service);
    expect(await tollgate(['apply', '-f', escapes, '--dry-run'], env)).toEqual({
      code: 0,
      stdout: 'No changes.\n',
      stderr: '',
    });
    expect(await tollgate(['apply', '-f', escapes], env)).toMatchObject({ code: 0, stdout: 'No changes.\n' });
    expect(await auditCount(service)).toBe(audited);
  });

  it('refuses before any change a plan the API would refuse part-way through', async () => {
    const before = await auditCount(service);
    const shapes = write(
      'shapes.yaml',
      [
        'routes:',
        '  - routeId: tilde',
        '    match: { pathPrefix: /v1/~user, host: api.example.com }',
        '    upstreamUrl: http://127.0.0.1:9/',
        '    timeoutMs: 4000',
        'plans:',
        '  - rateLimitId: no-period',
        '    limits: [{ limit: 5 }]',
        '  - rateLimitId: concurrent',
        '    limits: [{ limit: 2, algorithm: concurrency, period: minute, burst: 4 }]',
        '',
      ].join('\n'),
    );
    const run = await tollgate(['apply', '-f', shapes, '--dry-run'], env);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr.split('\n')).toEqual([
      'Nothing changed: ' + `${shapes}:8: plans[0].limits[0].period: is required`,
      `${shapes}:10: plans[1].limits[0].period: a concurrency limit has no period`,
      `${shapes}:10: plans[1].limits[0].burst: only a tokenBucket limit has a burst`,
      '',
    ]);
    expect(await tollgate(['apply', '-f', shapes], env)).toMatchObject({ code: 1, stdout: '' });
    expect((await service.admin('GET', '/tollgate/routes/tilde')).body.timeoutMs).toBeNull();
    expect(await auditCount(service)).toBe(before);
  });

  it("applies and exports a stripe-v2 export's streamUrl and two webhooks of one URL, as apply takes them", async () => {
    const text = [
      'webhooks:',
      '  - { url: "http://127.0.0.1:9/shared", events: [key.created] }',
      '  - { url: "http://127.0.0.1:9/shared", events: [key.deleted], description: second }',
      'billingExports:',
      '  - type: stripe-v2',
      '    url: https://api.stripe.example',
      '    streamUrl: https://meter-events.stripe.example',
      '    credential: ${STRIPE_KEY}',
      '    eventName: v2_calls',
      '    interval: hour',
      '    subject: consumer',
      '',
    ].join('\n');
    const declared = write('stream.yaml', text);
    expect(await tollgate(['apply', '-f', declared], env)).toMatchObject({ code: 0, stderr: '' });
    expect(await tollgate(['apply', '-f', declared], env)).toMatchObject({
      code: 0,
      stdout: 'No changes.\n',
    });

    const exported = await tollgate(['export'], env);
    expect(exported.stdout).toContain('streamUrl: https://meter-events.stripe.example');
    expect(exported.stdout.match(/url: http:\/\/127\.0\.0\.1:9\/shared/g)).toHaveLength(2);
    const copy = write('exported-stream.yaml', exported.stdout);
    expect(
      await tollgate(['apply', '-f', copy], { ...env, STRIPE_V2_V2_CALLS_CREDENTIAL: STRIPE_SECRET }),
    ).toEqual({
      code: 0,
      stdout: 'No changes.\n',
      stderr: '',
    });

    const moved = write('moved.yaml', text.replace('meter-events.stripe.example', 'stream.stripe.example'));
    expect(await tollgate(['apply', '-f', moved, '--dry-run'], env)).toMatchObject({
      code: 2,
      stdout: expect.stringContaining('~ update billing export "stripe-v2 v2_calls": streamUrl'),
    });
    expect(await tollgate(['apply', '-f', moved], env)).toMatchObject({ code: 0, stderr: '' });
    const stream = (await service.admin('GET', '/tollgate/billing-exports')).body.billingExports.find(
      (e: { type: string }) => e.type === 'stripe-v2',
    );
    expect(stream.streamUrl).toBe('https://stream.stripe.example');
  });
});

describe('npm run tollgate', () => {
  const BUILT = join(ROOT, 'packages/client/dist/bin/tollgate.js');
  /** `npm run tollgate -- --help` in the checkout, with this Node first on PATH. */
  const npmTollgate = () =>
    runToEnd('npm', ['run', '--silent', 'tollgate', '--', '--help'], {
      cwd: ROOT,
      env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
    });

  it('rebuilds the client only when it is out of date, and never deletes it under a command beside it', async () => {
    const built = statSync(BUILT).mtimeMs;
    const [first, second] = await Promise.all([npmTollgate(), npmTollgate()]);
    expect([first.code, second.code]).toEqual([0, 0]);
    expect(first.stdout).toContain('tollgate apply -f FILE');
    // Nothing changed since the build: nothing was built again.
    expect(statSync(BUILT).mtimeMs).toBe(built);

    // Out of date: one command rebuilds while the other runs the command it finds.
    utimesSync(BUILT, new Date(0), new Date(0));
    const [rebuilding, beside] = await Promise.all([npmTollgate(), npmTollgate()]);
    expect([rebuilding, beside]).toEqual([
      expect.objectContaining({ code: 0, stderr: '' }),
      expect.objectContaining({ code: 0, stderr: '' }),
    ]);
    expect(statSync(BUILT).mtimeMs).toBeGreaterThan(0);
  }, 120_000);
});

afterAll(() => expectNoSecretsLogged());
