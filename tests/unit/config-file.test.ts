/**
 * The configuration file of `tollgate apply` (docs/guides/configuration-as-code.md): its JSON Schema as
 * committed is the one the server builds from its create bodies, and a fault in a YAML or a JSON file
 * is named by file, line and field.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { readConfigFile } from '../../packages/client/src/config/apply-config.js';
import { CONFIG_SCHEMA } from '../../packages/client/src/config/validate-config.js';
import { buildConfigSchema } from '../../src/management/config-schema.js';

const ROOT = resolve(import.meta.dirname, '../..');
let folder: string;

beforeAll(() => (folder = mkdtempSync(join(tmpdir(), 'tollgate-config-file-'))));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

async function faultsOf(name: string, text: string, env: Record<string, string> = {}): Promise<string> {
  const path = join(folder, name);
  writeFileSync(path, text);
  try {
    await readConfigFile(path, env);
  } catch (err) {
    return (err as Error).message.replaceAll(`${path}:`, `${name}:`);
  }
  return '';
}

it('commits the schema the server builds (npm run build writes it)', () => {
  const committed = JSON.parse(readFileSync(join(ROOT, 'packages/client/config-schema.json'), 'utf8'));
  expect(committed).toEqual(buildConfigSchema());
});

it('commits a schema JSON Schema allows (the command does not check it against the meta-schema)', () => {
  const metaSchema = new Ajv();
  metaSchema.validateSchema(CONFIG_SCHEMA);
  expect(metaSchema.errors).toBeNull();
});

it('names the line and field of a fault in a JSON file', async () => {
  const text = JSON.stringify(
    { routes: [{ routeId: 'a', match: { pathPrefix: 'v1' }, upstreamUrl: 'http://b' }] },
    null,
    2,
  );
  expect(await faultsOf('tollgate.json', text)).toBe(
    'tollgate.json:6: routes[0].match.pathPrefix: must match pattern "^(?:/|(?:/(?:[A-Za-z0-9._~!$&\'()*+,;=:@-]|%[0-9A-Fa-f]{2})+)+)$"',
  );
});

it('names an unknown section, a repeated identity and a credential written out', async () => {
  const text = [
    'plan: []',
    'routes:',
    '  - { routeId: a, match: { pathPrefix: /a }, upstreamUrl: "http://h/1" }',
    '  - { routeId: a, match: { pathPrefix: /b }, upstreamUrl: "http://h/1" }',
    'billingExports:',
    '  - type: lago',
    '    url: https://lago.example',
    '    credential: lago-secret-in-git',
    '    eventName: calls',
    '    interval: day',
    '    subject: key',
  ].join('\n');
  expect((await faultsOf('tollgate.yaml', text)).split('\n')).toEqual([
    'tollgate.yaml:1: plan: is not a known field',
    expect.stringMatching(/^tollgate\.yaml:8: billingExports\[0\]\.credential: must match pattern/),
  ]);
  const repeated = text.replace('plan: []', 'plans: []').replace('lago-secret-in-git', '${LAGO_KEY}');
  expect(await faultsOf('tollgate.yaml', repeated)).toBe(
    'tollgate.yaml:4: routes[1].routeId: repeats routes[0] ("a")',
  );
});

it('resolves ${VAR} in any value, keeps secrets as references, and writes $${ for a literal ${', async () => {
  const path = join(folder, 'env.yaml');
  writeFileSync(
    path,
    [
      'plans:',
      '  - { rateLimitId: "${PLAN}", description: "costs $${PRICE}", limit: 5, period: day }',
      'billingExports:',
      '  - { type: lago, url: "${LAGO_URL}", credential: "${LAGO_KEY}", eventName: c, interval: day, subject: key }',
      'portal:',
      '  publicPlans: ["${PLAN}"]',
      '  oidc: { issuer: "${IDP}", clientId: c, clientSecret: "${OIDC_SECRET}", claim: sub, match: externalId }',
    ].join('\n'),
  );
  const { config } = await readConfigFile(path, {
    PLAN: 'gold',
    LAGO_URL: 'https://lago.example',
    LAGO_KEY: 'k',
    IDP: 'https://id.example',
    OIDC_SECRET: 'client-secret',
  });
  expect(config.plans).toEqual([
    { rateLimitId: 'gold', description: 'costs ${PRICE}', limit: 5, period: 'day' },
  ]);
  expect(config.billingExports?.[0]).toMatchObject({
    url: 'https://lago.example',
    credential: '${LAGO_KEY}',
  });
  expect(config.portal).toEqual({
    publicPlans: ['gold'],
    oidc: {
      issuer: 'https://id.example',
      clientId: 'c',
      clientSecret: '${OIDC_SECRET}',
      claim: 'sub',
      match: 'externalId',
    },
  });
});

it('refuses an OIDC client secret written in the file, and a portal given as a list', async () => {
  const text = [
    'portal:',
    '  oidc: { issuer: "https://id.example", clientId: c, clientSecret: s3cret, claim: sub, match: externalId }',
  ].join('\n');
  expect(await faultsOf('tollgate.yaml', text)).toMatch(
    /^tollgate\.yaml:2: portal\.oidc\.clientSecret: must match pattern/,
  );
  expect(await faultsOf('tollgate.yaml', 'portal:\n  - title: Acme\n')).toBe(
    'tollgate.yaml:1: portal: must be object',
  );
});

it('names the line of a YAML syntax error', async () => {
  expect(await faultsOf('broken.yaml', 'plans:\n  - rateLimitId: a\n    limit: 5\n  period: day\n')).toMatch(
    /^broken\.yaml:4: /,
  );
});

it('takes two webhooks with one URL, as the service holds them and export writes them', async () => {
  const text = [
    'webhooks:',
    '  - { url: "http://h/1", events: [key.created] }',
    '  - { url: "http://h/1", events: [key.deleted] }',
  ].join('\n');
  expect(await faultsOf('tollgate.yaml', text)).toBe('');
});

it('refuses before any change what the API refuses beyond its schema, each with its line', async () => {
  const text = [
    'plans:',
    '  - { rateLimitId: seed, limit: 5 }',
    '  - rateLimitId: shapes',
    '    limits:',
    '      - { limit: 5 }',
    '      - { limit: 5, period: hour, burst: 9 }',
    '      - { limit: 5, period: day, algorithm: sliding, burst: 9 }',
    '      - { limit: 2, period: minute, algorithm: concurrency, burst: 3 }',
    '  - rateLimitId: names',
    '    limits:',
    '      - { limit: 5, period: hour, name: quota }',
    '      - { limit: 50, period: day, name: quota }',
    '  - rateLimitId: twice',
    '    limits: [{ limit: 1, period: day }, { limit: 2, period: day, name: other }]',
    '  - rateLimitId: tokens',
    '    limit: 100000',
    '    period: minute',
    '    costs:',
    '      - { match: { pathPrefix: /v1 } }',
    '      - { match: { pathPrefix: /v2 }, cost: 3, settleMax: 9 }',
    '      - { match: { pathPrefix: /v3 }, cost: 3, reserve: { pointer: /max_tokens, default: 9 }, settle: { preset: openai } }',
    'consumers:',
    '  - name: Acme',
    '    externalId: acme',
    '    credits: { remaining: 5, refill: { amount: 5, interval: day, dayOfMonth: 3 } }',
  ].join('\n');
  expect((await faultsOf('tollgate.yaml', text)).split('\n')).toEqual([
    'tollgate.yaml:2: plans[0].period: is required (or send limits)',
    'tollgate.yaml:5: plans[1].limits[0].period: is required',
    'tollgate.yaml:6: plans[1].limits[1].burst: only a tokenBucket limit has a burst',
    'tollgate.yaml:7: plans[1].limits[2].burst: only a tokenBucket limit has a burst',
    'tollgate.yaml:8: plans[1].limits[3].period: a concurrency limit has no period',
    'tollgate.yaml:8: plans[1].limits[3].burst: only a tokenBucket limit has a burst',
    'tollgate.yaml:12: plans[2].limits[1].name: repeats the name "quota"',
    'tollgate.yaml:14: plans[3].limits[1]: repeats the period, algorithm and per of another limit without a match (day, fixed, key)',
    'tollgate.yaml:19: plans[4].costs[0].cost: is required without settle',
    'tollgate.yaml:20: plans[4].costs[1].settleMax: needs settle: it bounds what settle reads',
    'tollgate.yaml:21: plans[4].costs[2].reserve: cannot come with cost: either is the reservation',
    'tollgate.yaml:25: consumers[0].credits.refill.dayOfMonth: applies to a monthly refill only',
  ]);
});

it('names the file and line of an alias bomb instead of expanding it', async () => {
  const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
  for (const [name, below] of [
    ['b', 'a'],
    ['c', 'b'],
    ['d', 'c'],
    ['e', 'd'],
  ])
    levels.push(`${name}: &${name} [${Array(9).fill(`*${below}`).join(', ')}]`);
  levels.push(`plans: [*e, *e, *e, *e, *e, *e, *e, *e, *e]`);
  expect(await faultsOf('bomb.yaml', levels.join('\n'))).toMatch(/^bomb\.yaml:2: .*alias/i);
});
