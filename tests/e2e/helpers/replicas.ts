import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REDIS_URL, createTestDatabase, testKeyPrefix, type TestDatabase } from '../../helpers/services.js';
import { sleep, waitFor } from '../../helpers/poll.js';
import { startBackend, type Backend } from './backend.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './tollgate.js';

/**
 * Several Tollgate processes of one deployment: one root token, one encryption key, one database, one
 * Redis prefix. `start()` adds a replica (again, after a kill) with the same settings.
 */
export class Replicas {
  readonly all: Tollgate[] = [];
  readonly env: Record<string, string>;

  constructor(env: Record<string, string>) {
    this.env = {
      ROOT_TOKEN: 'root-' + randomBytes(16).toString('hex'),
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      ...env,
    };
  }

  /** Starts `count` replicas together (they migrate the database concurrently, as a rollout does). */
  async start(count = 1, extraEnv: Record<string, string> = {}): Promise<Tollgate[]> {
    const started = await Promise.all(
      Array.from({ length: count }, () => startTollgate({ ...this.env, ...extraEnv })),
    );
    this.all.push(...started);
    return started;
  }

  /** Stops every replica still running (SIGKILL after 15 s): for afterAll, never throws. */
  async stopAll(): Promise<void> {
    await Promise.all(
      this.all.map(async (t) => {
        const timer = setTimeout(() => t.process.kill('SIGKILL'), 15_000);
        await t.stop().catch(() => {});
        clearTimeout(timer);
      }),
    );
  }
}

/**
 * A deployment of replicas on Redis and Postgres in front of a recording backend, in a fresh database
 * (startFleet), or one embedded Tollgate (startEmbedded).
 */
export interface Fleet {
  readonly backend: Backend;
  /** undefined: embedded, its database a SQLite file in its DATA_DIR. */
  readonly database: TestDatabase | undefined;
  readonly replicas: Replicas;
  /** The replicas started with the fleet. */
  readonly members: Tollgate[];
  /** For afterAll: stops everything, drops the database and checks that no secret was logged. */
  stop(): Promise<void>;
}

export async function startFleet(count: number, env: Record<string, string> = {}): Promise<Fleet> {
  const [backend, database] = await Promise.all([startBackend(), createTestDatabase({ migrated: true })]);
  const replicas = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
    ...env,
  });
  const members = await replicas.start(count);
  return {
    backend,
    database,
    replicas,
    members,
    async stop() {
      await replicas.stopAll();
      await backend.close();
      await database.drop();
      if (replicas.all.length) expectNoSecretsLogged();
    },
  };
}

/**
 * One Tollgate with nothing configured but its upstream: SQLite in a fresh DATA_DIR and in-process
 * counters, in front of a recording backend.
 */
export async function startEmbedded(env: Record<string, string> = {}): Promise<Fleet> {
  const backend = await startBackend();
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-embedded-'));
  const replicas = new Replicas({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url, ...env });
  const members = await replicas.start(1).catch(async (err: unknown) => {
    await backend.close();
    throw err;
  });
  return {
    backend,
    database: undefined,
    replicas,
    members,
    async stop() {
      await replicas.stopAll();
      await backend.close();
      rmSync(dataDir, { recursive: true, force: true });
      expectNoSecretsLogged();
    },
  };
}

export { msUntilSeenEverywhere, sleep, waitFor } from '../../helpers/poll.js';

/**
 * fetch with a deadline (10 s by default) whose timer is cleared as soon as the answer is read
 * (AbortSignal.timeout would keep thousands of timers alive after the test, holding Jest's worker open).
 */
export async function fetchWithin<T>(
  url: string,
  init: RequestInit,
  read: (res: Response) => Promise<T>,
  withinMs = 10_000,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`no answer from ${url} within ${withinMs / 1_000} s`)),
    withinMs,
  );
  try {
    return await read(await fetch(url, { ...init, signal: controller.signal }));
  } finally {
    clearTimeout(timer);
  }
}

/** A proxied request with a key; resolves the status, or 0 when the connection failed. */
export async function hit(
  tollgate: Tollgate,
  secret: string,
  path = '/v1/items',
  headers: Record<string, string> = {},
): Promise<number> {
  try {
    return await fetchWithin(
      tollgate.url + path,
      { headers: { authorization: `Bearer ${secret}`, ...headers } },
      async (res) => {
        await res.arrayBuffer();
        return res.status;
      },
    );
  } catch {
    return 0;
  }
}

/** Clients sending requests at once until `until()` says stop; counts the 200s they got. */
export function load(
  tollgate: Tollgate,
  secret: string,
  clients: number,
  until: () => boolean,
): { answered: () => number; done: Promise<void> } {
  let answered = 0;
  const client = async () => {
    while (!until()) {
      const status = await hit(tollgate, secret, '/v1/load');
      if (status === 200) answered++;
      // A pause after each request: a proof needs traffic across its fault, not as much as a client can
      // send, which would take CPU the other test files share. Longer once the listener closed at SIGTERM.
      await sleep(status === 0 ? 20 : 10);
    }
  };
  return {
    answered: () => answered,
    done: Promise.all(Array.from({ length: clients }, client)).then(() => {}),
  };
}

/** The full response of a proxied request (status, headers, parsed body). */
export async function hitFull(tollgate: Tollgate, secret: string, path = '/v1/items', withinMs?: number) {
  const started = performance.now();
  const { res, text } = await fetchWithin(
    tollgate.url + path,
    { headers: { authorization: `Bearer ${secret}` } },
    async (r) => ({ res: r, text: await r.text() }),
    withinMs,
  );
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
  return { status: res.status, headers: res.headers, body: body as any, ms: performance.now() - started };
}

/** `n` requests spread round-robin over `replicas`, all in flight at once; resolves the statuses. */
export function burst(
  replicas: readonly Tollgate[],
  secret: string,
  n: number,
  path = '/v1/items',
): Promise<number[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => hit(replicas[i % replicas.length]!, secret, path)));
}

/** A key with a plan bound (created through `admin`), of `consumerId` if given; returns id and secret. */
export async function keyWithPlan(
  admin: Tollgate,
  name: string,
  limit?: number,
  period = 'day',
  consumerId?: string,
): Promise<{ id: string; secret: string }> {
  const created = await admin.admin('POST', '/consumer-api-key/create', { name, consumerId });
  if (created.status !== 201)
    throw new Error(`key create: ${created.status} ${JSON.stringify(created.body)}`);
  const key = created.body as { id: string; secret: string };
  if (limit !== undefined) {
    const planId = await planOf(admin, name, limit, period);
    const bound = await admin.admin('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: key.id,
      rateLimitId: planId,
    });
    if (bound.status !== 200) throw new Error(`plan bind: ${bound.status} ${JSON.stringify(bound.body)}`);
  }
  return key;
}

/** A plan of one limit, created through `admin` under a fresh id; returns the id. */
async function planOf(admin: Tollgate, name: string, limit: number, period: string): Promise<string> {
  const planId = `${name}-${randomBytes(4).toString('hex')}`;
  const plan = await admin.admin('POST', '/rate-limit/create', { rateLimitId: planId, limit, period });
  if (plan.status !== 201) throw new Error(`plan create: ${plan.status} ${JSON.stringify(plan.body)}`);
  return planId;
}

export interface Account {
  readonly consumerId: string;
  readonly keys: { readonly id: string; readonly secret: string }[];
}

/**
 * A consumer and `keys` keys of it (created through `admin`). `limit` binds the consumer a plan of that
 * many requests per `period`, shared by all its keys; `keyLimit` gives the first key a plan of its own
 * too, so its requests are decided against both plans at once.
 */
export async function consumerWithKeys(
  admin: Tollgate,
  name: string,
  settings: { keys: number; limit?: number; period?: string; keyLimit?: number },
): Promise<Account> {
  const { keys, limit, period = 'day', keyLimit } = settings;
  const created = await admin.admin('POST', '/tollgate/consumers', {
    name,
    ...(limit !== undefined && { rateLimitId: await planOf(admin, name, limit, period) }),
  });
  if (created.status !== 201)
    throw new Error(`consumer create: ${created.status} ${JSON.stringify(created.body)}`);
  const consumerId = created.body.consumerId as string;
  const ownPlan = keyLimit === undefined ? undefined : await planOf(admin, `${name}-key`, keyLimit, period);
  const made: Account['keys'] = [];
  for (let i = 0; i < keys; i++) {
    const key = await admin.admin('POST', '/consumer-api-key/create', {
      name: `${name}-${i}`,
      consumerId,
      ...(i === 0 && ownPlan !== undefined && { rateLimitId: ownPlan }),
    });
    if (key.status !== 201) throw new Error(`key create: ${key.status} ${JSON.stringify(key.body)}`);
    made.push({ id: key.body.id as string, secret: key.body.secret as string });
  }
  return { consumerId, keys: made };
}

/** `totalRequests` of a key as one replica's detail response shows it (undefined if not 200). */
export async function totalOn(tollgate: Tollgate, keyId: string): Promise<number | undefined> {
  const detail = await tollgate.admin('GET', `/consumer-api-key/${keyId}`).catch(() => undefined);
  return detail?.status === 200 ? (detail.body.usage.totalRequests as number) : undefined;
}

/**
 * The totals of a key's or a consumer's detail (`/consumer-api-key/<id>`, `/tollgate/consumers/<id>`)
 * as one replica shows them (undefined if not 200).
 */
export async function usageOn(
  tollgate: Tollgate,
  detailPath: string,
): Promise<{ total: number; successful: number } | undefined> {
  const detail = await tollgate.admin('GET', detailPath).catch(() => undefined);
  if (detail?.status !== 200) return undefined;
  return { total: detail.body.usage.totalRequests, successful: detail.body.usage.successfulRequests };
}

/** The value of one Prometheus sample line on a replica's /metrics (undefined when absent). */
export async function metric(tollgate: Tollgate, sample: string): Promise<number | undefined> {
  const text = await (await fetch(tollgate.opsUrl + '/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(sample + ' '));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

/**
 * Which of `pids` owns the TCP connection whose local port is `port` (a Postgres backend's
 * client_port): /proc/net/tcp gives the socket inode, /proc/<pid>/fd the owner.
 */
export function pidOwningLocalPort(port: number, pids: readonly number[]): number | undefined {
  const hexPort = ':' + port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[];
    try {
      lines = readFileSync(table, 'utf8').split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(hexPort)) inodes.add(cols[9]!);
    }
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (match && inodes.has(match[1]!)) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/**
 * Waits for `line` in a replica's output: it comes through a pipe, and a loaded machine can hand the
 * test the answers it logged about before the line itself.
 */
export async function logged(tollgate: Tollgate, line: string): Promise<void> {
  await waitFor(
    async () => tollgate.output.some((l) => l.includes(line)),
    (seen) => seen,
    { what: `"${line}" in the output` },
  );
}

/** How many lines each process has logged so far: a mark for `failoversSince`. */
export const outputMark = (ts: readonly Tollgate[]): number[] => ts.map((t) => t.output.length);

/**
 * Log lines since `mark` in which a replica gave up on Redis for a while (limiting in process, or
 * refusing): an exactness failure that comes with one of these was a Redis timeout, not a counting bug.
 */
export const failoversSince = (ts: readonly Tollgate[], mark: readonly number[]): string[] =>
  ts.flatMap((t, i) => t.output.slice(mark[i] ?? 0).filter((l) => l.includes('Redis unavailable')));
