// The runtime image without Docker: the files the Dockerfile's runtime stage copies are laid out in a
// temporary /app, and its CMD is run the way the container runs it (production mode, with Postgres and
// Redis as in docker-compose.yml and k8s/). Shows that the copied files are enough to start, that the HEALTHCHECK command works,
// that SIGTERM ends the process with 0, that the k8s Job's `tollgate apply` runs there, and that neither
// writes anything under /app (read-only root).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DockerfileParser, type Copy } from 'dockerfile-ast';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import { ROOT, readText, readYamlDocuments } from '../helpers/deploy-files.js';
import { REDIS_URL, type TestDatabase, createTestDatabase, testKeyPrefix } from '../helpers/services.js';

const instructions = DockerfileParser.parse(readText('Dockerfile')).getInstructions();
const runtimeStart = instructions.map((i) => i.getKeyword()).lastIndexOf('FROM');
const runtime = instructions.slice(runtimeStart + 1);
const argsOf = (keyword: string) =>
  runtime.filter((i) => i.getKeyword() === keyword).map((i) => i.getArgumentsContent() ?? '');
const cmd = JSON.parse(argsOf('CMD')[0]!) as string[];
const healthcheck = JSON.parse(argsOf('HEALTHCHECK')[0]!.replace(/^CMD\s+/, '')) as string[];
const imageEnv = Object.fromEntries(
  argsOf('ENV')
    .join(' ')
    .split(/\s+/)
    .filter((p) => p.includes('='))
    .map((p) => p.split('=') as [string, string]),
);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function files(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.name !== 'node_modules')
    .flatMap((e) =>
      e.isDirectory() ? files(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
    );
}

async function waitFor(url: string, deadline: number): Promise<number> {
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok || Date.now() > deadline) return res.status;
    } catch {
      if (Date.now() > deadline) return 0;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const runHealthcheck = (opsPort: number) =>
  spawnSync(process.execPath, healthcheck.slice(1), {
    env: { ...process.env, OPS_PORT: String(opsPort) },
    timeout: 10_000,
  }).status;

describe('runtime image layout', () => {
  let dir: string;
  let app: string;
  let child: ChildProcess | undefined;
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-image-'));
    app = join(dir, 'app');
    // Same as the runtime stage: COPY from the context as is, dist/ as `npm run build` made it
    // (the same tsc -p tsconfig.build.json as the build stage), node_modules linked.
    for (const copy of runtime.filter((i) => i.getKeyword() === 'COPY') as Copy[]) {
      const parts = (copy.getArgumentsContent() ?? '').split(/\s+/);
      const dest = join(app, parts.at(-1)!);
      for (const source of parts.slice(0, -1)) {
        const from = copy.getFromFlag() ? source.replace(/^\/app\//, '') : source;
        const target = dest.endsWith('/') ? join(dest, from.split('/').at(-1)!) : dest;
        mkdirSync(dirname(target), { recursive: true });
        if (from === 'node_modules') symlinkSync(join(ROOT, 'node_modules'), target);
        else cpSync(join(ROOT, from), target, { recursive: true });
      }
    }
  });

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  });

  test('CMD starts, answers /healthz and /readyz, passes HEALTHCHECK, and exits 0 on SIGTERM', async () => {
    expect(existsSync(join(app, cmd.at(-1)!))).toBe(true);
    const before = files(app);
    const [port, opsPort] = [await freePort(), await freePort()];
    child = spawn(process.execPath, cmd.slice(1), {
      cwd: app,
      env: {
        PATH: process.env.PATH,
        ...imageEnv,
        PORT: String(port),
        OPS_PORT: String(opsPort),
        HOST: '127.0.0.1',
        DATA_DIR: join(dir, 'data'),
        DATABASE_URL: db.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: testKeyPrefix(),
        SECRET_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
        ROOT_TOKEN: 'image-test-root-token-0123456789',
        SHUTDOWN_TIMEOUT_MS: '3000',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));

    const deadline = Date.now() + 30_000;
    expect({ healthz: await waitFor(`http://127.0.0.1:${opsPort}/healthz`, deadline), stderr }).toEqual({
      healthz: 200,
      stderr,
    });
    expect(await waitFor(`http://127.0.0.1:${opsPort}/readyz`, deadline)).toBe(200);
    expect(runHealthcheck(opsPort)).toBe(0);
    // The web console is in the image (dist/console): its page answers on the public port.
    const consolePage = await fetch(`http://127.0.0.1:${port}/tollgate/console/`);
    expect({
      status: consolePage.status,
      app: (await consolePage.text()).includes('<div id="app">'),
    }).toEqual({ status: 200, app: true });

    // The Job of k8s/base/config-job.yaml: its command, run in the image, applies a configuration file.
    const [job] = readYamlDocuments('k8s/base/config-job.yaml') as IJob[];
    const command = job!.spec!.template.spec!.containers[0]!.command!;
    const file = join(dir, 'tollgate.yaml');
    writeFileSync(file, 'plans:\n  - { rateLimitId: from-the-job, limit: 5, period: minute }\n');
    const applied = spawnSync(
      process.execPath,
      command.slice(1).map((arg) => (arg === '/etc/tollgate/tollgate.yaml' ? file : arg)),
      {
        cwd: app,
        env: {
          PATH: process.env.PATH,
          TOLLGATE_URL: `http://127.0.0.1:${port}`,
          TOLLGATE_TOKEN: 'image-test-root-token-0123456789',
        },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect({ status: applied.status, stdout: applied.stdout, stderr: applied.stderr }).toEqual({
      status: 0,
      stdout: '+ create plan "from-the-job"\n1 change(s) applied.\n',
      stderr: '',
    });

    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise((r) => (timer = setTimeout(() => r('timeout'), 15_000))),
    ]);
    clearTimeout(timer);
    expect({ code, stderr }).toEqual({ code: 0, stderr });
    // The image's root filesystem may be read-only: only DATA_DIR (and /tmp) may have been written.
    expect(files(app)).toEqual(before);
    // With nothing listening the same HEALTHCHECK fails (the check can fail).
    expect(runHealthcheck(opsPort)).toBe(1);
  }, 60_000);
});
