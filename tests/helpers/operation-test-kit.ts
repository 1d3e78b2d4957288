/**
 * The kit of the tests beside the management operations (src/management/resources/<resource>/operations.test.ts).
 * Each test file gives, per operation, a valid call and a table of the statuses that operation adds:
 * its success and each error code of its own, with how to provoke it. The refusals every operation
 * shares (token, scope, method, throttle, database, body, page size and cursor) the kit derives from
 * the operation's own definition (`sharedRefusals`). It runs one `it` per status against an app on
 * the embedded store (the scope and the 503s on Postgres too, whose drivers fail differently), checks
 * every answer against the OpenAPI document, and fails when a documented status or code has no way
 * to provoke it, or one is provoked that the document lacks.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { sql } from 'kysely';
import request, { type Response } from 'supertest';
import { createManagementApp, type ManagementDeps } from '../../src/management/app.js';
import { buildOpenApiDocument, openApiPath } from '../../src/management/openapi.js';
import { pageFields } from '../../src/management/schemas.js';
import type { RateLimiter } from '../../src/limits/rate-limiter.js';
import { isWrite, type Operation } from '../../src/management/operation.js';
import { SCOPES, type Scope } from '../../src/management/scopes.js';
import { ERRORS } from '../../src/errors.js';
import { AuthThrottle } from '../../src/proxy/auth-throttle.js';
import { openPostgres, type Db } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { OpenApiChecker } from './management-openapi.js';
import { managementDeps, STORAGES, type Storage } from './management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
type StorageKind = keyof typeof STORAGES;
type Method = Operation['method'];

/** Dependencies a test sets itself (the rest as production wires them, tests/helpers/management-storage.ts). */
type Overrides = Partial<Omit<ManagementDeps, 'rootToken' | 'usage'>>;

/** One running management app over a fresh, migrated store, and what tests make on it. */
export interface Harness {
  readonly app: Express;
  /** The store's database, for what no management call makes (another replica's lease, a fan-out). */
  readonly db: Db;
  /** Another app over the same database with other dependencies (a low throttle, a failing limiter). */
  appWith(overrides: Overrides): Express;
  /** A POST of `body` to `path` with the root token that must answer 201 (a route, a webhook…); its body. */
  create(path: string, body: object): Promise<Record<string, string>>;
  /** A PATCH of `body` to `path` with the root token that must answer 200 (settings); its body. */
  change(path: string, body: object): Promise<Record<string, unknown>>;
  /** A new key (`rateLimitId`: bound to that plan; `consumerId`: held by that consumer); its id. */
  key(settings?: { rateLimitId?: string; consumerId?: string }): Promise<string>;
  /** A new key's secret. */
  secret(): Promise<string>;
  /** A new plan of one limit; its id. */
  plan(): Promise<string>;
  /** A new consumer (`rateLimitId`: bound to that plan; `externalId`: owned so); its id. */
  consumer(settings?: { rateLimitId?: string; externalId?: string }): Promise<string>;
  /** A new admin token with `scopes`. */
  token(scopes: readonly Scope[], expiresAt?: string): Promise<{ id: string; secret: string }>;
  /** `work` with an app over a database that is gone (an embedded store closed, a Postgres server down). */
  whileDatabaseGone<T>(work: (app: Express) => Promise<T>): Promise<T>;
  /** `work` with an app over this database while it refuses writes (read-only), reads going on. */
  whileWritesRefused<T>(work: (app: Express) => Promise<T>): Promise<T>;
}

/** The inputs of one call; the path is the operation's with `params` filled in. */
export interface Call {
  readonly params?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

/** What to change in the valid call: `params` and `query` are merged into its own, `body` replaces its. */
export interface Changes extends Call {
  readonly app?: Express;
  /** The path as sent, instead of the operation's with `params` filled in. */
  readonly path?: string;
  readonly method?: Method | 'put';
  /** The body as text with its Content-Type, instead of `body` as JSON. */
  readonly raw?: { readonly type: string; readonly text: string };
  /** Bearer token; `null` sends no Authorization header. The root token by default. */
  readonly token?: string | null;
}

/** A valid call made ready (the objects it needs exist), to send as it is or changed. */
export interface Prepared {
  send(changes?: Changes): Promise<Response>;
}

/** What a provoker gets: the operation, the embedded store's harness, and the operation's valid call. */
export interface Attempt {
  readonly operation: Operation;
  readonly harness: Harness;
  /** The valid call, prepared afresh on `on` (the embedded store's harness by default). */
  prepare(on?: Harness): Promise<Prepared>;
  /** The valid call prepared afresh and sent with `changes`. */
  send(changes?: Changes): Promise<Response>;
  /** The harness of a store of that kind, opened on first use. */
  harnessOf(kind: StorageKind): Promise<Harness>;
}

/** Makes the operation answer one status (and code): every answer it returns is checked. */
export type Provoke = (t: Attempt) => Promise<Response | Response[]>;

/** Per status: the success, or each error code with how to provoke it. */
type Statuses = Readonly<Record<number, Provoke | Readonly<Record<string, Provoke>>>>;

export interface OperationTable {
  /** A call that succeeds, on objects of its own (made with `harness`), with a token of only its scope. */
  readonly valid: (harness: Harness) => Call | Promise<Call>;
  /**
   * The operation's own statuses: its success and the codes it adds to the shared refusals (a shared
   * code listed here is provoked both ways).
   */
  readonly statuses: Statuses;
}

/** A fresh id, for objects a call creates under a name of its own. */
export const uniqueId = (prefix: string): string => `${prefix}-${randomBytes(5).toString('hex')}`;

function send(app: Express, method: Method | 'put', path: string, changes: Changes): Promise<Response> {
  let req = request(app)[method](path);
  if (changes.token !== null) req = req.set('Authorization', `Bearer ${changes.token ?? ROOT_TOKEN}`);
  if (changes.query) req = req.query(changes.query);
  if (changes.raw) return req.set('Content-Type', changes.raw.type).send(changes.raw.text);
  return changes.body === undefined ? req : req.send(changes.body as object);
}

function expectCreated(res: Response): Record<string, string> {
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body as Record<string, string>;
}

async function openHarness(kind: StorageKind): Promise<{ harness: Harness; storage: Storage }> {
  const storage = await STORAGES[kind]();
  await migrate(storage.handle);
  const appOver = (db: Db, overrides: Overrides = {}) =>
    createManagementApp(managementDeps(db, { rootToken: ROOT_TOKEN, ...overrides }));
  const app = appOver(storage.handle.db);
  const create = (path: string, body: object) => send(app, 'post', path, { body }).then(expectCreated);
  const harness: Harness = {
    app,
    db: storage.handle.db,
    create,
    async change(path, body) {
      const res = await send(app, 'patch', path, { body });
      expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
      return res.body as Record<string, unknown>;
    },
    appWith: (overrides) => appOver(storage.handle.db, overrides),
    key: async (settings = {}) =>
      (await create('/consumer-api-key/create', { name: 'a key', ...settings })).id!,
    secret: async () => (await create('/consumer-api-key/create', { name: 'a key' })).secret!,
    async plan() {
      const rateLimitId = uniqueId('plan');
      await create('/rate-limit/create', { rateLimitId, limit: 10, period: 'minute' });
      return rateLimitId;
    },
    consumer: async (settings = {}) =>
      (await create('/tollgate/consumers', { name: 'a consumer', ...settings })).consumerId!,
    async token(scopes, expiresAt) {
      const body = await create('/tollgate/admin-tokens', {
        name: uniqueId('token'),
        scopes,
        ...(expiresAt && { expiresAt }),
      });
      return { id: body.id!, secret: body.secret! };
    },
    async whileDatabaseGone(work) {
      if (kind === 'postgres') {
        // Nothing listens on port 1: every connection is refused.
        const down = await openPostgres('postgres://postgres@127.0.0.1:1/none');
        try {
          return await work(appOver(down.db));
        } finally {
          await down.close();
        }
      }
      const gone = await STORAGES.embedded();
      await migrate(gone.handle);
      await gone.dispose();
      return work(appOver(gone.handle.db));
    },
    async whileWritesRefused(work) {
      if (kind === 'postgres') {
        // A second connection to the same database whose transactions are read-only (a standby's answer).
        const options = encodeURIComponent('-c default_transaction_read_only=on');
        const readOnly = await openPostgres(`${storage.url!}?options=${options}`);
        try {
          return await work(appOver(readOnly.db));
        } finally {
          await readOnly.close();
        }
      }
      // The embedded store is one connection: make it read-only for the call, then writable again.
      await sql`pragma query_only = on`.execute(storage.handle.db);
      try {
        return await work(app);
      } finally {
        await sql`pragma query_only = off`.execute(storage.handle.db);
      }
    },
  };
  return { harness, storage };
}

const DOCUMENT = buildOpenApiDocument();

interface DocumentedStatus {
  /** The error codes the document names under the status (none for the success). */
  readonly codes: string[];
  readonly description: string;
}

/** The statuses the OpenAPI document lists for an operation. */
function documentedStatuses(operation: Operation): Map<string, DocumentedStatus> {
  type Responses = Record<string, { description: string; content?: Record<string, { examples?: object }> }>;
  const item = DOCUMENT.paths[openApiPath(operation.path)]?.[operation.method] as
    { responses: Responses } | undefined;
  if (!item) throw new Error(`the document has no ${operation.method.toUpperCase()} ${operation.path}`);
  const statuses = new Map<string, DocumentedStatus>();
  for (const [status, { description, content }] of Object.entries(item.responses)) {
    // `default` is 500 internal_error: only a bug answers it, so nothing from outside can provoke it.
    if (status === 'default') continue;
    statuses.set(status, { codes: Object.keys(content?.['application/json']?.examples ?? {}), description });
  }
  return statuses;
}

/**
 * One `describe` per operation of `operations` (a resource file's list), named after its id, with one
 * `it` per documented status; an operation without a table fails too.
 */
export function describeOperations(
  operations: readonly Operation[],
  tables: Readonly<Record<string, OperationTable>>,
): void {
  let checker: OpenApiChecker;
  const opened = new Map<StorageKind, Promise<{ harness: Harness; storage: Storage }>>();
  const harnessOf = async (kind: StorageKind) => {
    if (!opened.has(kind)) opened.set(kind, openHarness(kind));
    return (await opened.get(kind)!).harness;
  };
  let embedded: Harness;

  beforeAll(async () => {
    checker = await OpenApiChecker.create();
    embedded = await harnessOf('embedded');
  }, 60_000);
  afterAll(async () => {
    for (const pending of opened.values()) await (await pending).storage.dispose();
  });

  it('has a table for every operation of its file, and for nothing else', () => {
    expect(Object.keys(tables).sort()).toEqual(operations.map((op) => op.id).sort());
  });

  for (const operation of operations) {
    const table = tables[operation.id];
    if (!table) continue;
    const template = openApiPath(operation.path);
    const documented = documentedStatuses(operation);
    const attempt = (): Attempt => {
      const prepare = async (on = embedded): Promise<Prepared> => {
        const valid = await table.valid(on);
        return {
          send(changes = {}) {
            const params = { ...valid.params, ...changes.params };
            const path =
              changes.path ??
              operation.path.replace(/:([A-Za-z]+)/g, (_all, name: string) =>
                encodeURIComponent(params[name] ?? ''),
              );
            const query = { ...valid.query, ...changes.query };
            return send(changes.app ?? on.app, changes.method ?? operation.method, path, {
              ...valid,
              ...changes,
              query,
            });
          },
        };
      };
      return {
        operation,
        harness: embedded,
        prepare,
        send: async (changes) => (await prepare()).send(changes),
        harnessOf,
      };
    };

    const provokes = merged(sharedRefusals(operation), table.statuses);
    describe(operation.id, () => {
      const statuses = [...new Set([...documented.keys(), ...Object.keys(provokes)])].sort();
      for (const status of statuses) {
        const { codes, description } = documented.get(status) ?? { codes: [], description: 'not documented' };
        it(`${status} ${codes.length > 0 ? codes.join(', ') : description}`, async () => {
          const entry = provokes[Number(status)];
          if (!documented.has(status))
            throw new Error(
              `the document lists no ${status} for ${operation.id}: remove its block (or the definition that derives it), or document it`,
            );
          if (!entry)
            throw new Error(
              `the document lists ${status} for ${operation.id}, and its table has no block for it: add one`,
            );
          const cases = typeof entry === 'function' ? { '': entry } : entry;
          expect(Object.keys(cases).length).toBeGreaterThan(0);
          expect(Object.keys(cases).filter(Boolean).sort()).toEqual([...codes].sort());
          for (const [code, provoke] of Object.entries(cases)) {
            const answers = [await provoke(attempt())].flat();
            expect(answers.length).toBeGreaterThan(0);
            for (const res of answers) {
              expect({ status: res.status, body: res.body }).toMatchObject({
                status: Number(status),
                ...(code && { body: { code } }),
              });
              expect(checker.problems(operation.method, template, res)).toEqual([]);
            }
          }
        });
      }
    });
  }
}

/** A rate limiter that cannot be reached (Redis down): a detail cannot read where its limits stand. */
export const limiterDown: RateLimiter = {
  consume: () => Promise.reject(new Error('Redis is down')),
  settle: () => Promise.reject(new Error('Redis is down')),
  peek: () => Promise.reject(new Error('Redis is down')),
  peekBalances: () => Promise.reject(new Error('Redis is down')),
  syncBalances: () => Promise.reject(new Error('Redis is down')),
  spentBalances: () => [],
  close: async () => {},
};

// How to provoke what every operation may answer, from its valid call.

/** The valid call as it is. */
export const succeeds: Provoke = (t) => t.send();

/** Every provoker's answers, in turn: several ways to the same code. */
export const all =
  (...provokes: Provoke[]): Provoke =>
  async (t) => {
    const answers: Response[] = [];
    for (const provoke of provokes) answers.push(...[await provoke(t)].flat());
    return answers;
  };

/** No Authorization header, and a token that is not one. */
export const withoutValidToken: Provoke = async (t) => [
  await t.send({ token: null }),
  await t.send({ token: 'not-a-token' }),
];

/** An admin token holding every scope but the one the operation needs. */
/**
 * On each store, an admin token holding every scope but the one the operation needs: refused with the
 * challenge naming it; and a token holding only that scope makes the valid call.
 */
export const withoutTheScope: Provoke = async (t) => {
  const scope = t.operation.scope!;
  const answers: Response[] = [];
  for (const kind of Object.keys(STORAGES) as StorageKind[]) {
    const harness = await t.harnessOf(kind);
    const without = await harness.token(SCOPES.filter((other) => other !== scope));
    const refused = await (await t.prepare(harness)).send({ token: without.secret });
    expect(refused.body).toEqual({ error: `This call needs the scope ${scope}`, code: 'insufficient_scope' });
    // RFC 6750 §3: realm is optional, scope names what is missing.
    expect(refused.headers['www-authenticate']).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);
    answers.push(refused);
    const only = await harness.token([scope]);
    const allowed = await (await t.prepare(harness)).send({ token: only.secret });
    expect({ status: allowed.status, body: allowed.body }).toMatchObject({
      status: t.operation.success.status,
    });
  }
  return answers;
};

/** Every path parameter percent-encoded wrongly (`%E0` decodes to nothing): the path names nothing. */
export const withAnUndecodableId: Provoke = (t) =>
  t.send({ path: t.operation.path.replace(/:[A-Za-z]+/g, '%E0') });

/** A page of 0 items: below the page size's minimum. */
export const withAPageOfNone: Provoke = (t) => t.send({ query: { limit: '0' } });

export const withACursorNotIssuedHere: Provoke = (t) => t.send({ query: { cursor: 'not-issued-here' } });

/** PUT: no management route has it. */
export const withAnotherMethod: Provoke = (t) => t.send({ method: 'put' });

/** Past a throttle of one wrong credential a minute, the root token itself is refused. */
export const afterAFailedAttempt: Provoke = async (t) => {
  // One instant for both calls: the budget is per minute, and the two must fall in one.
  const now = Date.now();
  const app = t.harness.appWith({
    throttle: new AuthThrottle({ limit: 1, period: 'minute' }),
    clock: () => now,
  });
  const call = await t.prepare();
  expect((await call.send({ app, token: 'not-a-token' })).status).toBe(401);
  const throttled = await call.send({ app });
  expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
  return throttled;
};

export const withMalformedJson: Provoke = (t) =>
  t.send({ raw: { type: 'application/json', text: '{"name": ' } });

/** 65 KiB of valid JSON: one KiB over the limit. */
export const withA65KiBBody: Provoke = (t) =>
  t.send({ raw: { type: 'application/json', text: JSON.stringify({ name: 'x'.repeat(65 * 1024) }) } });

export const withATextBody: Provoke = (t) => t.send({ raw: { type: 'text/plain', text: '{}' } });

/** Each store's own way of being gone: an embedded store closed, a Postgres server refusing connections. */
export const whileTheDatabaseIsGone: Provoke = async (t) => {
  const answers: Response[] = [];
  for (const kind of Object.keys(STORAGES) as StorageKind[]) {
    const harness = await t.harnessOf(kind);
    const call = await t.prepare(harness);
    answers.push(await harness.whileDatabaseGone((app) => call.send({ app })));
  }
  return answers;
};

/**
 * An admin token is checked against the database: on each store, one holding the operation's scope
 * meets the database that is gone (the root token, which the kit's own way sends, needs none).
 */
export const anAdminTokenWhileTheDatabaseIsGone: Provoke = async (t) => {
  const answers: Response[] = [];
  for (const kind of Object.keys(STORAGES) as StorageKind[]) {
    const harness = await t.harnessOf(kind);
    const { secret } = await harness.token([t.operation.scope ?? 'keys:read']);
    const call = await t.prepare(harness);
    answers.push(await harness.whileDatabaseGone((app) => call.send({ app, token: secret })));
  }
  return answers;
};

/** Each store refusing writes: the embedded store read-only, a Postgres connection read-only; with Retry-After. */
export const whileWritesAreRefused: Provoke = async (t) => {
  const answers: Response[] = [];
  for (const kind of Object.keys(STORAGES) as StorageKind[]) {
    const harness = await t.harnessOf(kind);
    const call = await t.prepare(harness);
    const res = await harness.whileWritesRefused((app) => call.send({ app }));
    expect(res.body).toEqual({ error: expect.any(String), code: 'storage_unavailable' });
    expect(res.headers['retry-after']).toBe(String(ERRORS.storage_unavailable.retryAfterSeconds));
    answers.push(res);
  }
  return answers;
};

/**
 * The refusals every operation shares, derived from its definition as the OpenAPI document derives
 * them (src/management/openapi.ts), each provoked from the operation's valid call.
 */
function sharedRefusals(operation: Operation): Statuses {
  const statuses: Record<number, Record<string, Provoke>> = {
    401: { unauthorized: withoutValidToken },
    405: { method_not_allowed: withAnotherMethod },
    429: { too_many_failed_attempts: afterAFailedAttempt },
    503: { database_unavailable: whileTheDatabaseIsGone },
  };
  if (operation.scope !== null) statuses[403] = { insufficient_scope: withoutTheScope };
  if (isWrite(operation)) statuses[503]!.storage_unavailable = whileWritesAreRefused;
  if (operation.body) {
    statuses[400] = { invalid_json: withMalformedJson };
    statuses[413] = { payload_too_large: withA65KiBBody };
    statuses[415] = { unsupported_media_type: withATextBody };
  }
  if (operation.params) statuses[404] = { [operation.params.notFound]: withAnUndecodableId };
  const query = operation.query?.schema.properties;
  if (query?.limit === pageFields.limit) statuses[400] = { validation_failed: withAPageOfNone };
  if (query?.cursor) statuses[400] = { ...statuses[400], invalid_cursor: withACursorNotIssuedHere };
  return statuses;
}

const REPLACING = new WeakSet<Provoke>();

/**
 * A table's way to a shared code that replaces the kit's, for an operation that meets the code
 * otherwise (whoami: the root token needs no database, so only an admin token meets one that is gone).
 */
export function instead(provoke: Provoke): Provoke {
  const replacing: Provoke = (t) => provoke(t);
  REPLACING.add(replacing);
  return replacing;
}

/** The shared refusals with the table's statuses: a code in both is provoked both ways, unless `instead`. */
function merged(shared: Statuses, own: Statuses): Statuses {
  const statuses: Record<number, Provoke | Readonly<Record<string, Provoke>>> = { ...shared };
  for (const [status, entry] of Object.entries(own)) {
    const before = statuses[Number(status)];
    if (before === undefined || typeof entry === 'function' || typeof before === 'function') {
      statuses[Number(status)] = entry;
      continue;
    }
    const codes: Record<string, Provoke> = { ...before };
    for (const [code, provoke] of Object.entries(entry))
      codes[code] = codes[code] && !REPLACING.has(provoke) ? all(codes[code], provoke) : provoke;
    statuses[Number(status)] = codes;
  }
  return statuses;
}
