import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The kernel hands out outgoing connections' ports from 32768 up (ip_local_port_range). */
const EPHEMERAL_PORTS_START = 32_768;

/**
 * A port nobody listens on now (and, with `plus`, port + plus too: a Cluster node's bus port), below
 * the ephemeral range, so no outgoing connection can take it between this check and the server's
 * bind, or while a test has its server stopped.
 */
export async function freePort(plus = 0): Promise<number> {
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * (EPHEMERAL_PORTS_START - 10_000 - plus));
    if ((await portIsFree(port)) && (plus === 0 || (await portIsFree(port + plus)))) return port;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Polls until `port` answers PING (or throws after `timeoutMs`). */
export async function waitForRedis(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pong(port))) {
    if (Date.now() > deadline)
      throw new Error(`redis-server on port ${port} did not start within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A raw PING: an ioredis client left behind by a refused connection holds a timer for 2 s. */
function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
    socket.setTimeout(1_000, () => socket.destroy());
    socket.once('data', (data) => {
      resolve(data.toString().startsWith('+PONG'));
      socket.destroy();
    });
    socket.once('close', () => resolve(false));
    socket.once('error', () => {});
  });
}

/**
 * Rejects when the binary can't start (these tests need redis-server on PATH, not only a Redis) or
 * exits, e.g. because its port was taken after all: at once, not after the start-up timeout.
 */
export function spawnFailure(child: ChildProcess): Promise<never> {
  return new Promise((_, reject) => {
    child.once('error', (err) =>
      reject(
        new Error(
          `cannot start redis-server (${err.message}); install it, e.g. apt-get install redis-server`,
        ),
      ),
    );
    child.once('exit', (code, signal) =>
      reject(new Error(`redis-server exited during start-up (${signal ?? `code ${code}`})`)),
    );
  });
}

/**
 * A private redis-server this test owns, so it can be stopped, restarted, SCRIPT FLUSHed and its
 * INFO commandstats read without touching the shared Redis. No persistence: a restart starts empty.
 */
export class RedisServer {
  private process: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), 'tg-redis-'));

  private constructor(
    readonly port: number,
    private readonly extraArgs: readonly string[],
  ) {}

  static async start(extraArgs: readonly string[] = []): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), extraArgs);
    await server.restart();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    this.process = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        ...this.extraArgs,
      ],
      { stdio: 'ignore' },
    );
    await Promise.race([waitForRedis(this.port), spawnFailure(this.process)]);
  }

  /** SIGKILL: the connection drops the way it does when a Redis host dies. */
  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** SIGSTOP: the server holds its connections but answers nothing, like a hung host. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  resume(): void {
    this.process?.kill('SIGCONT');
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
