import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../helpers/redis-server.js';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * A private Postgres cluster (initdb in a temporary folder) that a test may stop and start: the
 * outage, for real. initdb refuses to run as root, so as root every command runs as the `postgres`
 * system user, which owns the folder.
 */
export class PostgresServer {
  private running = false;

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async start(): Promise<PostgresServer> {
    const dir = mkdtempSync(join(tmpdir(), 'tg-pg-'));
    const server = new PostgresServer(dir, await freePort());
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
      chownSync(dir, uid, gid);
    }
    server.run('initdb', ['-D', server.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await server.restart();
    return server;
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** `postgres://` URL of a database on this server (`postgres` by default). */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async createDatabase(name: string): Promise<string> {
    const client = new pg.Client({ connectionString: this.url() });
    await client.connect();
    try {
      await client.query(`create database ${name}`);
    } finally {
      await client.end();
    }
    return this.url(name);
  }

  /**
   * Starts (again) and waits until it accepts connections. Nothing is flushed to disk (the machine
   * never crashes under a test), but a commit is in the WAL, in the kernel's cache, before it is
   * answered: `synchronous_commit=off` would lose commits Tollgate was told of to the immediate stop.
   */
  async restart(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
    this.run('pg_ctl', [
      '-D',
      this.dataDir,
      '-o',
      options,
      '-l',
      join(this.dir, 'log'),
      '-w',
      '-t',
      '30',
      'start',
    ]);
    this.running = true;
  }

  /** Immediate shutdown: connections drop the way they do when the database host dies. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    await this.stop().catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }

  private run(command: string, args: string[]): void {
    const asRoot = process.getuid?.() === 0;
    const file = asRoot ? 'runuser' : join(BIN, command);
    const argv = asRoot ? ['-u', 'postgres', '--', join(BIN, command), ...args] : args;
    const result = spawnSync(file, argv, { encoding: 'utf8', timeout: 60_000 });
    if (result.status !== 0) {
      throw new Error(
        `${command} failed (${result.status ?? result.signal}): ${result.stderr}${result.stdout}`,
      );
    }
  }
}
