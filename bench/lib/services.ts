// What the targets need around them: tools, the backend, a fresh database, Redis, and Tollgate
// itself, built, started and given a plan and a key through its management API.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import {
  BACKEND_URL,
  DB_NAME,
  HUGE_LIMIT,
  NICE,
  NODE,
  PG_URL,
  PLAN_ID,
  PORT,
  REDIS_URL,
  ROOT,
  ROOT_TOKEN,
  TOLLGATE_MAIN,
  TOLLGATE_NODE_ARGS,
  TWO_LIMIT_PLAN_ID,
  env,
  log,
  run,
} from './config.ts';
import { httpOk, pinTree, startProc, waitFor, type Proc } from './processes.ts';

export function have(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

/** Installs from Debian the tools a command needs that are missing (by default every peer's). */
/** Debian's package of a tool, where it is not named after it. */
const PACKAGE_OF: Readonly<Record<string, string>> = { h2load: 'nghttp2-client' };

export function ensureTools(tools: readonly string[] = ['nginx', 'haproxy', 'wrk']): void {
  const missing = tools.filter((t) => !have(t)).map((t) => PACKAGE_OF[t] ?? t);
  if (missing.length === 0) return;
  log(`installing ${missing.join(', ')} from Debian`);
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env: aptEnv });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env: aptEnv });
}

export function renderConfig(template: string, out: string, vars: Record<string, string | number>): string {
  let text = fs.readFileSync(path.join(ROOT, 'bench/peers', template), 'utf8');
  for (const [k, v] of Object.entries(vars)) text = text.replaceAll(`{{${k}}}`, String(v));
  const file = path.join(run.workDir, out);
  fs.writeFileSync(file, text);
  return file;
}

export async function startBackend(): Promise<Proc> {
  const conf = renderConfig('nginx-backend.conf', 'backend.conf', { DIR: run.workDir, PORT: PORT.backend });
  const proc = startProc('backend', 'nginx', [
    '-c',
    conf,
    '-p',
    run.workDir,
    '-e',
    path.join(run.workDir, 'backend-error.log'),
    '-g',
    'daemon off;',
  ]);
  await waitFor(proc, 'backend', httpOk(`${BACKEND_URL}/`));
  return proc;
}

export async function freshDatabase(name = DB_NAME): Promise<string> {
  const admin = new pg.Client({ connectionString: `${PG_URL}/postgres` });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return `${PG_URL}/${name}`;
}

export async function flushRedis(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  await redis.flushdb();
  redis.disconnect();
}

export function buildTollgate(): boolean {
  if (env.BENCH_SKIP_BUILD !== '1') {
    if (!fs.existsSync(path.join(ROOT, 'src/main.ts'))) {
      log('src/main.ts does not exist yet: Tollgate targets skipped');
      return false;
    }
    log('npm run build');
    const result = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (result.status !== 0) {
      log('npm run build failed: Tollgate targets skipped');
      return false;
    }
  }
  return fs.existsSync(TOLLGATE_MAIN);
}

export interface TollgateOptions {
  readonly name: string;
  readonly port: number;
  readonly mode: 'embedded' | 'redis';
  readonly databaseUrl?: string;
  readonly redisUrl?: string;
  readonly workers?: number;
  readonly nodeArgs?: string[];
  readonly extraEnv?: Record<string, string>;
  /** Another build's entry point (BENCH_BASELINE's); this tree's by default. */
  readonly main?: string;
}

export const encryptionKey = randomBytes(32).toString('base64');

export async function startTollgate(o: TollgateOptions): Promise<Proc> {
  const opsPort = o.port + PORT.opsOffset;
  const vars: Record<string, string> = {
    PORT: String(o.port),
    OPS_PORT: String(opsPort),
    HOST: '127.0.0.1',
    UPSTREAM_URL: BACKEND_URL,
    ROOT_TOKEN,
    LOG_LEVEL: 'warn',
    WORKERS: String(o.workers ?? 1),
    NODE_ENV: 'production',
    ...o.extraEnv,
  };
  if (o.mode === 'embedded') {
    vars.DATA_DIR = path.join(run.workDir, `${o.name}-data`);
  } else {
    vars.DATABASE_URL = o.databaseUrl ?? '';
    vars.REDIS_URL = o.redisUrl ?? run.redisUrl;
    vars.SECRET_ENCRYPTION_KEY = encryptionKey;
    vars.DATA_DIR = path.join(run.workDir, `${o.name}-data`);
  }
  const proc = startProc(
    o.name,
    NODE,
    [...TOLLGATE_NODE_ARGS, ...(o.nodeArgs ?? []), o.main ?? TOLLGATE_MAIN],
    vars,
  );
  await waitFor(proc, '/readyz', httpOk(`http://127.0.0.1:${opsPort}/readyz`));
  return proc;
}

export async function management(
  port: number,
  route: string,
  body: unknown,
  accept: number[] = [200, 201],
): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ROOT_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!accept.includes(res.status)) throw new Error(`POST ${route} → ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export async function ensurePlan(port: number): Promise<void> {
  await management(
    port,
    '/rate-limit/create',
    { rateLimitId: PLAN_ID, description: 'bench: never triggers', limit: HUGE_LIMIT, period: 'hour' },
    [201, 409],
  );
  await management(
    port,
    '/rate-limit/create',
    {
      rateLimitId: TWO_LIMIT_PLAN_ID,
      description: 'bench: a burst limit and a monthly quota, never triggered',
      limits: [
        { name: 'burst', limit: HUGE_LIMIT, period: 'second' },
        { name: 'quota', limit: HUGE_LIMIT, period: 'month' },
      ],
    },
    [201, 409],
  );
}

// A key bound to a huge plan (of one limit, or of two): the limiter runs on every request but never
// refuses. `consumerId`: a key of that consumer, whose plan (if any) is decided with the key's at once.
export async function createKey(
  port: number,
  name: string,
  applyPlan = true,
  planId = PLAN_ID,
  consumerId?: string,
): Promise<string> {
  const key = await management(port, '/consumer-api-key/create', { name, consumerId });
  if (applyPlan)
    await management(port, '/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: planId });
  return String(key.secret);
}

// A consumer (an account holding keys), bound to `planId` when given; its id.
export async function createConsumer(port: number, name: string, planId?: string): Promise<string> {
  const consumer = await management(port, '/tollgate/consumers', { name, rateLimitId: planId });
  return String(consumer.consumerId);
}

// ---------------------------------------------------------------------------------------------
// wrk
// Cost per request: Redis commands (INFO commandstats) and Postgres writes (pg_stat_database)

export async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1] as string, Number(m[2]));
  return out;
}

// A private redis-server when one is installed (on `cpus` when given, a taskset list): INFO
// commandstats is server-wide, and the shared Redis on 6379 carries the other test suites' commands.
export async function privateRedis(cpus?: string): Promise<string> {
  if (!have('redis-server')) return REDIS_URL;
  const port = 16379;
  const proc = startProc('redis', 'redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    run.workDir,
  ]);
  const url = `redis://127.0.0.1:${port}`;
  await waitFor(proc, 'PING', async () => {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {}); // refused until the server listens: expected while waiting
    try {
      await r.connect();
      return (await r.ping()) === 'PONG';
    } finally {
      r.disconnect();
    }
  });
  if (cpus !== undefined) pinTree(proc.child.pid, cpus);
  return url;
}

// The shared Redis cannot be given the run's priority: under BENCH_NICE the Redis-backed targets get
// a private redis-server at the same priority, or they would wait on a server that other work starves.
export async function runRedis(): Promise<void> {
  if (NICE !== undefined) run.redisUrl = await privateRedis();
  await flushRedis(run.redisUrl);
}
