import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, spawnFailure, waitForRedis } from './redis-server.js';

const run = promisify(execFile);

/**
 * A real three-master Redis Cluster from redis-server processes in a temporary folder, on free
 * ports (each node also needs port + 10000 for its cluster bus). `nodes` are the `host:port` seeds
 * for REDIS_CLUSTER_NODES.
 */
export class RedisCluster {
  private constructor(
    readonly ports: readonly number[],
    private readonly processes: readonly ChildProcess[],
    private readonly dir: string,
  ) {}

  get nodes(): string[] {
    return this.ports.map((p) => `127.0.0.1:${p}`);
  }

  static async start(masters = 3): Promise<RedisCluster> {
    // A port can still be taken between the check and the bind: start again on fresh ports then.
    for (let attempt = 1; ; attempt++) {
      try {
        return await RedisCluster.startOnce(masters);
      } catch (err) {
        if (attempt === 3) throw err;
      }
    }
  }

  private static async startOnce(masters: number): Promise<RedisCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'tg-redis-cluster-'));
    const ports: number[] = [];
    while (ports.length < masters) {
      const port = await freePort(10_000);
      if (!ports.includes(port)) ports.push(port);
    }
    const processes = ports.map((port) => {
      const nodeDir = join(dir, String(port));
      mkdirSync(nodeDir);
      return spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          '5000',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          nodeDir,
        ],
        { stdio: 'ignore' },
      );
    });
    const cluster = new RedisCluster(ports, processes, dir);
    try {
      await Promise.race([Promise.all(ports.map((p) => waitForRedis(p))), ...processes.map(spawnFailure)]);
      await run('redis-cli', [
        '--cluster',
        'create',
        ...cluster.nodes,
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ]);
      await cluster.waitUntilOk();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** Every node must see every slot covered before clients can rely on the topology. */
  private async waitUntilOk(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const port of this.ports) {
      const node = new Redis({ port, host: '127.0.0.1' });
      try {
        while (!/cluster_state:ok/.test(String(await node.call('CLUSTER', 'INFO')))) {
          if (Date.now() > deadline) throw new Error(`cluster node ${port} not ok after ${timeoutMs} ms`);
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        node.disconnect();
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.processes.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}
