/**
 * @tollgate/client as a user gets it: `npm pack -w @tollgate/client` makes the tarball, `npm install`
 * puts it into an empty folder, and there a TypeScript file that uses createClient type-checks against
 * the installed declarations and, run by Node, manages keys on a real Tollgate.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** What a user writes: typed calls (the @ts-expect-error lines must be errors), run against TOLLGATE_URL. */
const USE_OF_THE_CLIENT = `import { createClient, type components } from '@tollgate/client';

const client = createClient({ baseUrl: process.env.TOLLGATE_URL!, token: process.env.TOLLGATE_TOKEN! });

const created = await client.POST('/consumer-api-key/create', { body: { name: 'from-the-tarball' } });
if (!created.data) throw new Error('create failed: ' + created.response.status);
const id: string = created.data.id;
const listed = await client.GET('/consumer-api-key', { params: { query: { limit: 1000 } } });
const read = await client.GET('/consumer-api-key/{consumerApiKeyId}', { params: { path: { consumerApiKeyId: id } } });
const name: string | undefined = read.data?.name;
const missing = await client.GET('/consumer-api-key/{consumerApiKeyId}', { params: { path: { consumerApiKeyId: 'key_missing' } } });
const error: components['schemas']['Error'] | undefined = missing.error;

console.log(JSON.stringify({
  created: { status: created.response.status, name: created.data.name, secret: created.data.secret },
  listedIds: listed.data?.apiKeys.map((key) => key.consumerApiKeyId),
  read: { status: read.response.status, id: read.data?.consumerApiKeyId, name },
  missing: { status: missing.response.status, code: error?.code },
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
}
`;

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
  files: ['use.ts'],
};

let packed: string;
let folder: string;
let tollgate: Tollgate;

beforeAll(async () => {
  packed = mkdtempSync(join(tmpdir(), 'tollgate-client-pack-'));
  await run('npm', ['pack', '-w', '@tollgate/client', '--pack-destination', packed], { cwd: ROOT });
  const [tarball] = readdirSync(packed).filter((name) => name.endsWith('.tgz'));
  folder = mkdtempSync(join(tmpdir(), 'tollgate-client-user-'));
  writeFileSync(
    join(folder, 'package.json'),
    JSON.stringify({ name: 'client-user', private: true, type: 'module' }),
  );
  await run(
    'npm',
    ['install', join(packed, tarball!), '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'],
    { cwd: folder },
  );
  writeFileSync(join(folder, 'use.ts'), USE_OF_THE_CLIENT);
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

it('creates, lists and reads keys on a real Tollgate from the installed package', async () => {
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
  });
});
