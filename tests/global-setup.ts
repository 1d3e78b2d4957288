/**
 * Where Docker runs and neither DATABASE_URL nor REDIS_URL is set, start Postgres and Redis with
 * testcontainers for the run; otherwise the suites use the variables (or the servers on 127.0.0.1,
 * tests/helpers/services.ts). Jest workers inherit the variables set here.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

interface Stoppable {
  stop(): Promise<unknown>;
}
const started = globalThis as typeof globalThis & { tollgateContainers?: Stoppable[] };

async function dockerRuns(): Promise<boolean> {
  try {
    await promisify(execFile)('docker', ['info'], { timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL || process.env.REDIS_URL || !(await dockerRuns())) return;
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const { RedisContainer } = await import('@testcontainers/redis');
  const [postgres, redis] = await Promise.all([
    new PostgreSqlContainer('postgres:15').withUsername('postgres').withDatabase('test').start(),
    new RedisContainer('redis:7').start(),
  ]);
  process.env.DATABASE_URL = postgres.getConnectionUri();
  process.env.REDIS_URL = redis.getConnectionUrl();
  started.tollgateContainers = [postgres, redis];
}
