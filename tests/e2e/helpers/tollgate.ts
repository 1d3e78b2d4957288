import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PATIENT_POSTGRES_ENV } from '../../helpers/services.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const MAIN = join(ROOT, 'dist/src/main.js');

export interface Tollgate {
  readonly url: string;
  readonly opsUrl: string;
  /** EXTAUTH_PORT's URL and EXTAUTH_GRPC_PORT's `host:port`, when the environment set them. */
  readonly extauthUrl: string | undefined;
  readonly extauthGrpcAddress: string | undefined;
  readonly rootToken: string;
  readonly process: ChildProcess;
  /** Every line the process wrote to stdout and stderr so far. */
  readonly output: string[];
  /** Management call with the root token; returns status and parsed JSON body. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** SIGTERM and wait; resolves the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Every line any Tollgate of this test file wrote, and every secret the management API handed out. */
const allOutput: string[] = [];
const secretsSeen = new Set<string>();

/** Secrets must never reach a log: call in afterAll of every e2e file, once its processes stopped. */
export function expectNoSecretsLogged(): void {
  const leaks = [...secretsSeen].filter((secret) => allOutput.some((line) => line.includes(secret)));
  expect({ secretsChecked: secretsSeen.size > 0, leaks }).toEqual({ secretsChecked: true, leaks: [] });
}

/**
 * Runs the built server (`npm run build` first: npm test does) as a child process on free ports
 * and resolves once it logs that it is listening.
 */
export async function startTollgate(env: Record<string, string> = {}): Promise<Tollgate> {
  const rootToken = env.ROOT_TOKEN ?? 'root-' + randomBytes(16).toString('hex');
  secretsSeen.add(rootToken);
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      OPS_PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DATA_DIR: env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'tollgate-e2e-')),
      ROOT_TOKEN: rootToken,
      ...PATIENT_POSTGRES_ENV,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  interface Ports {
    readonly port: number;
    readonly opsPort: number;
    readonly extauthPort?: number;
    readonly extauthGrpcPort?: number;
  }
  const ports = await new Promise<Ports>((resolvePorts, reject) => {
    const timer = setTimeout(
      () => reject(new Error('Tollgate did not start in 90 s:\n' + output.join('\n'))),
      90_000,
    );
    const onLine = (line: string) => {
      output.push(line);
      allOutput.push(line);
      if (line.includes('"tollgate listening"')) {
        clearTimeout(timer);
        resolvePorts(JSON.parse(line) as Ports);
      }
    };
    for (const stream of [child.stdout!, child.stderr!]) {
      let rest = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (rest + chunk.toString('utf8')).split('\n');
        rest = lines.pop()!;
        lines.forEach(onLine);
      });
    }
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`Tollgate exited (${code}) before listening:\n` + output.join('\n')));
    });
  });
  const url = `http://127.0.0.1:${ports.port}`;
  return {
    url,
    opsUrl: `http://127.0.0.1:${ports.opsPort}`,
    extauthUrl: ports.extauthPort === undefined ? undefined : `http://127.0.0.1:${ports.extauthPort}`,
    extauthGrpcAddress:
      ports.extauthGrpcPort === undefined ? undefined : `127.0.0.1:${ports.extauthGrpcPort}`,
    rootToken,
    process: child,
    output,
    async admin(method, path, body) {
      const res = await fetch(url + path, {
        method,
        headers: {
          authorization: `Bearer ${rootToken}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      const parsed = text ? JSON.parse(text) : undefined;
      if (typeof parsed?.secret === 'string') secretsSeen.add(parsed.secret);
      return { status: res.status, body: parsed };
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

/**
 * Runs a command of the built server (`rotate-secrets`, `upgrade-data-dir`) to its end, with only PATH
 * and `env` in its environment; `main` is the built entry point to run. Its output counts as logged.
 */
export function runCommand(
  command: string,
  env: Record<string, string>,
  main = MAIN,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [main, command], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('exit', (code) => {
      allOutput.push(...output.split('\n'));
      done({ code, output });
    });
  });
}
