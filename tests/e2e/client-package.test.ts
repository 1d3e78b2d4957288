/**
 * @tollgate/client as a user gets it: `npm pack -w @tollgate/client` makes the tarball of the built
 * package, `npm install` puts it into an empty folder (with Express, its optional peer), and there
 * TypeScript files that use createClient and verifyKey, and the README's ten-line Express server,
 * type-check against the installed declarations and, run by Node, manage and verify keys on a real
 * Tollgate; its `tollgate` command applies a configuration file there.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '../helpers/poll.js';
import { freePort } from '../helpers/redis-server.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** What a user writes: typed calls (the @ts-expect-error lines must be errors), run against TOLLGATE_URL. */
const USE_OF_THE_CLIENT = `import { createClient, verifyKey, TollgateVerifyError, type components, type VerifyAnswer } from '@tollgate/client';

const connection = { baseUrl: process.env.TOLLGATE_URL!, token: process.env.TOLLGATE_TOKEN! };
const client = createClient(connection);

const created = await client.POST('/consumer-api-key/create', { body: { name: 'from-the-tarball' } });
if (!created.data) throw new Error('create failed: ' + created.response.status);
const id: string = created.data.id;
const listed = await client.GET('/consumer-api-key', { params: { query: { limit: 1000 } } });
const read = await client.GET('/consumer-api-key/{consumerApiKeyId}', { params: { path: { consumerApiKeyId: id } } });
const name: string | undefined = read.data?.name;
const missing = await client.GET('/consumer-api-key/{consumerApiKeyId}', { params: { path: { consumerApiKeyId: 'key_missing' } } });
const error: components['schemas']['Error'] | undefined = missing.error;

const verified: VerifyAnswer = await verifyKey(connection, { key: created.data.secret, path: '/v1/weather', method: 'GET' });
const unknown = await verifyKey(connection, { key: 'tg_not-a-key' });
let failed = '';
try {
  await verifyKey({ ...connection, token: 'not-the-token' }, { key: created.data.secret });
} catch (err) {
  if (err instanceof TollgateVerifyError) failed = err.httpStatus + ' ' + err.code;
}

console.log(JSON.stringify({
  created: { status: created.response.status, name: created.data.name, secret: created.data.secret },
  listedIds: listed.data?.apiKeys.map((key) => key.consumerApiKeyId),
  read: { status: read.response.status, id: read.data?.consumerApiKeyId, name },
  missing: { status: missing.response.status, code: error?.code },
  verified: { valid: verified.valid, code: verified.code, id: verified.consumerApiKeyId, name: verified.name },
  unknown,
  failed,
}));

// Never called: each line must fail type-checking, or tsc reports the unused directive.
export function typeErrors() {
  // @ts-expect-error a key detail needs its id
  void client.GET('/consumer-api-key/{consumerApiKeyId}');
  // @ts-expect-error not a management path
  void client.GET('/consumer-api-keys');
  // @ts-expect-error a key is created with a name
  void client.POST('/consumer-api-key/create', { body: {} });
  // @ts-expect-error the list's limit is a number
  void client.GET('/consumer-api-key', { params: { query: { limit: 'all' } } });
  // @ts-expect-error verify needs the key
  void verifyKey(connection, { path: '/v1' });
  // @ts-expect-error a cost is a number of units
  void verifyKey(connection, { key: 'k', cost: 'high' });
}
`;

/** The README's Express server (the guide and the package's README show the same), in a \`ts\` block. */
const EXPRESS_SERVER =
  /```ts\n(import express from 'express';\nimport \{ tollgateExpress \} from '@tollgate\/client';\n[\s\S]*?)```/;

function expressServerOf(file: string): string {
  const found = EXPRESS_SERVER.exec(readFileSync(join(ROOT, file), 'utf8'));
  if (!found) throw new Error(`${file} shows no Express server protected by tollgateExpress`);
  return found[1]!;
}

/** A user's strict tsconfig; Node's types from this repository (the folder installs only the package). */
const TSCONFIG = {
  compilerOptions: {
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    typeRoots: [join(ROOT, 'node_modules/@types')],
    types: ['node'],
  },
  files: ['use.ts', 'server.ts'],
};

let packed: string;
let folder: string;
let tollgate: Tollgate;

beforeAll(async () => {
  packed = mkdtempSync(join(tmpdir(), 'tollgate-client-pack-'));
  // Without its prepack (a clean rebuild of packages/client/dist): the suite's build made that dist, and
  // removing it would pull the `tollgate` command from under the test files running it meanwhile.
  await run('npm', ['pack', '-w', '@tollgate/client', '--pack-destination', packed, '--ignore-scripts'], {
    cwd: ROOT,
  });
  const [tarball] = readdirSync(packed).filter((name) => name.endsWith('.tgz'));
  folder = mkdtempSync(join(tmpdir(), 'tollgate-client-user-'));
  writeFileSync(
    join(folder, 'package.json'),
    JSON.stringify({ name: 'client-user', private: true, type: 'module' }),
  );
  // Express, the optional peer the server below needs, and its types, at the versions this repository uses.
  const version = (name: string) =>
    JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version as string;
  await run(
    'npm',
    [
      'install',
      join(packed, tarball!),
      `express@${version('express')}`,
      `@types/express@${version('@types/express')}`,
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--ignore-scripts',
    ],
    { cwd: folder },
  );
  writeFileSync(join(folder, 'use.ts'), USE_OF_THE_CLIENT);
  // Run as written, but against this test's Tollgate and on a free port.
  const server = expressServerOf('README.md')
    .replace("'http://tollgate.internal:8080'", 'process.env.TOLLGATE_URL!')
    .replace('app.listen(3000);', 'app.listen(Number(process.env.PORT));');
  writeFileSync(join(folder, 'server.ts'), server);
  writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  tollgate = await startTollgate();
}, 300_000);

afterAll(async () => {
  await tollgate?.stop();
  for (const made of [packed, folder]) if (made) rmSync(made, { recursive: true, force: true });
  expectNoSecretsLogged();
});

it('installs from its tarball with the built files and their declarations, not the sources', () => {
  const installed = join(folder, 'node_modules/@tollgate/client');
  expect(existsSync(join(installed, 'dist/index.js'))).toBe(true);
  expect(existsSync(join(installed, 'dist/index.d.ts'))).toBe(true);
  expect(existsSync(join(installed, 'src'))).toBe(false);
  expect(existsSync(join(folder, 'node_modules/openapi-fetch'))).toBe(true);
  expect(existsSync(join(installed, 'config-schema.json'))).toBe(true);
});

it('installs the tollgate command: npx tollgate apply makes a file true, and says so', async () => {
  writeFileSync(
    join(folder, 'tollgate.yaml'),
    'plans:\n  - rateLimitId: from-the-tarball\n    limit: 5\n    period: minute\n',
  );
  const env = {
    PATH: process.env.PATH ?? '',
    TOLLGATE_URL: tollgate.url,
    TOLLGATE_TOKEN: tollgate.rootToken,
  };
  const npx = (args: string[]) => run('npx', ['--no-install', 'tollgate', ...args], { cwd: folder, env });
  const applied = await npx(['apply', '-f', 'tollgate.yaml']);
  expect(applied.stdout).toBe('+ create plan "from-the-tarball"\n1 change(s) applied.\n');
  expect((await tollgate.admin('GET', '/rate-limit/from-the-tarball')).body).toMatchObject({ limit: 5 });
  expect((await npx(['apply', '-f', 'tollgate.yaml'])).stdout).toBe('No changes.\n');
  expect((await npx(['export'])).stdout).toContain('rateLimitId: from-the-tarball');
});

it('types every management call from the OpenAPI document, as installed', async () => {
  const checked = await run(process.execPath, [
    join(ROOT, 'node_modules/typescript/bin/tsc'),
    '-p',
    join(folder, 'tsconfig.json'),
  ]).then(
    () => 'no errors',
    (failure: { stdout: string }) => failure.stdout,
  );
  expect(checked).toBe('no errors');
});

it('creates, lists, reads and verifies keys on a real Tollgate from the installed package', async () => {
  const { stdout } = await run(process.execPath, ['use.ts'], {
    cwd: folder,
    env: { PATH: process.env.PATH ?? '', TOLLGATE_URL: tollgate.url, TOLLGATE_TOKEN: tollgate.rootToken },
  });
  const seen = JSON.parse(stdout);
  expect(seen).toEqual({
    created: { status: 201, name: 'from-the-tarball', secret: expect.stringMatching(/^tg_/) },
    listedIds: [seen.read.id],
    read: { status: 200, id: expect.stringMatching(/^key_/), name: 'from-the-tarball' },
    missing: { status: 404, code: 'key_not_found' },
    verified: { valid: true, code: 'ok', id: seen.read.id, name: 'from-the-tarball' },
    unknown: { valid: false, code: 'invalid_api_key', limits: [] },
    failed: '401 unauthorized',
  });
});

it('shows one Express server of ten lines at most in the README, the guide and the package README, and it runs as written', async () => {
  const shown = expressServerOf('README.md');
  expect(shown.trim().split('\n').length).toBeLessThanOrEqual(10);
  expect(expressServerOf('docs/guides/verify-and-client.md')).toBe(shown);
  expect(expressServerOf('packages/client/README.md')).toBe(shown);
  const server = readFileSync(join(folder, 'server.ts'), 'utf8');
  expect(server).toContain('process.env.TOLLGATE_URL!');
  expect(server).toContain('Number(process.env.PORT)');

  const key = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'readme-server' });
  const port = await freePort();
  const child = spawn(process.execPath, ['server.ts'], {
    cwd: folder,
    env: {
      PATH: process.env.PATH ?? '',
      TOLLGATE_URL: tollgate.url,
      TOLLGATE_TOKEN: tollgate.rootToken,
      PORT: String(port),
    },
    stdio: 'inherit',
  });
  try {
    const weather = (headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${port}/v1/weather`, { headers }).then(
        async (res) => ({ status: res.status, body: await res.json() }),
        () => undefined,
      );
    const { value: refused } = await waitFor(weather, (answer) => answer !== undefined);
    expect(refused).toEqual({
      status: 401,
      body: { error: expect.any(String), code: 'missing_api_key' },
    });
    expect(await weather({ authorization: `Bearer ${key.body.secret}` })).toEqual({
      status: 200,
      body: { forecast: 'sunny', key: key.body.id },
    });
  } finally {
    child.kill();
  }
});
