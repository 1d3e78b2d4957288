/**
 * Finding keys (docs/guides/keys.md, Finding keys) through the management API in process, over the embedded SQLite
 * store and a real Postgres: the list sorted by creation, last use and 24-hour traffic with cursors
 * that walk every key once; a case-insensitive name search; how many keys match; a key found by its
 * secret sent in a body; and the signed-in token's own scopes. Every answer is checked against the
 * OpenAPI document.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import request, { type Response } from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { MAX_COUNTED_KEYS } from '../../src/management/resources/keys/schemas.js';
import { AuthThrottle } from '../../src/proxy/auth-throttle.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { sqlDialectOf } from '../../src/store/sql-dialect.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const HOUR = 3_600_000;
/** Saturday 2026-11-21 14:23:02 UTC: keys are created a minute apart from here. */
const START = Date.UTC(2026, 10, 21, 14, 23, 2);

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

interface Listed {
  readonly consumerApiKeyId: string;
  readonly name: string;
}

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('finding keys over %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let now = START;
  /** Key ids by name, in the order they were created. */
  const ids = new Map<string, string>();
  const secrets = new Map<string, string>();
  const logs: string[] = [];

  const call = (method: 'get' | 'post', path: string, options: { token?: string; body?: object } = {}) => {
    const agent = request(app);
    const req = agent[method](path).set('Authorization', `Bearer ${options.token ?? ROOT_TOKEN}`);
    return options.body === undefined ? req : req.send(options.body);
  };
  const documented = (method: 'get' | 'post', template: string, res: Response) => {
    expect(checker.problems(method, template, res)).toEqual([]);
    return res;
  };
  const list = async (query: string) =>
    documented('get', '/consumer-api-key', await call('get', `/consumer-api-key?${query}`));
  /** Every key of the list in `sort`, read `limit` at a time through the cursors. */
  async function walk(query: string, limit: number): Promise<string[]> {
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await list(`${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`.replace(/^&/, ''));
      expect(res.status).toBe(200);
      expect(res.body.apiKeys.length).toBeLessThanOrEqual(limit);
      names.push(...(res.body.apiKeys as Listed[]).map((k) => k.name));
      cursor = res.body.nextCursor;
    } while (cursor !== undefined);
    return names;
  }

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    const logger = createLogger('debug', { write: (line: string) => void logs.push(line) });
    app = createManagementApp(
      managementDeps(storage.handle.db, {
        rootToken: ROOT_TOKEN,
        clock: () => now,
        logger,
      }),
    );
    // Created a minute apart, so creation order is known; names of every case.
    for (const name of ['Alpha one', 'ALPHA two', 'alphabet', 'beta', '50%_off', 'École', 'gamma', 'delta']) {
      const res = await call('post', '/consumer-api-key/create', { body: { name } });
      expect(res.status).toBe(201);
      ids.set(name, res.body.id);
      secrets.set(name, res.body.secret);
      now += 60_000;
    }
    // Last use: beta the latest, then gamma, Alpha one; the others never.
    await new KeyRepository(storage.handle.db).markUsed(
      new Map([
        [ids.get('Alpha one')!, now - 3 * HOUR],
        [ids.get('gamma')!, now - 2 * HOUR],
        [ids.get('beta')!, now - HOUR],
      ]),
    );
    // Hour buckets: delta 7 (two consumers' rows of one hour, and another hour), gamma 5, beta 1; a
    // request 30 hours ago is outside the usage API's 24-hour range and counts for nobody.
    const hour = (ago: number) => new Date(Math.floor((now - ago * HOUR) / HOUR) * HOUR);
    await storage.handle.db
      .insertInto('usage_buckets')
      .values([
        { key_id: ids.get('delta')!, granularity: 'hour', start: hour(0), consumer_id: '', requests: 3 },
        { key_id: ids.get('delta')!, granularity: 'hour', start: hour(0), consumer_id: 'con_x', requests: 2 },
        { key_id: ids.get('delta')!, granularity: 'hour', start: hour(5), consumer_id: '', requests: 2 },
        { key_id: ids.get('gamma')!, granularity: 'hour', start: hour(23), consumer_id: '', requests: 5 },
        { key_id: ids.get('beta')!, granularity: 'hour', start: hour(1), consumer_id: '', requests: 1 },
        { key_id: ids.get('alphabet')!, granularity: 'hour', start: hour(30), consumer_id: '', requests: 50 },
      ] as never)
      .execute();
  }, 60_000);
  afterAll(() => storage.dispose());

  const names = () => [...ids.keys()];

  it('lists oldest first by default and newest first with sort=-createdAt, every key once through the cursors', async () => {
    expect(await walk('', 3)).toEqual(names());
    expect(await walk('sort=createdAt', 3)).toEqual(names());
    expect(await walk('sort=-createdAt', 3)).toEqual(names().reverse());
  });

  it('sorts by last use: most recent first and never-used last, or the reverse', async () => {
    const neverUsed = names().filter((n) => !['beta', 'gamma', 'Alpha one'].includes(n));
    const byId = (a: string, b: string) => (ids.get(a)! < ids.get(b)! ? -1 : 1);
    expect(await walk('sort=-lastUsedAt', 2)).toEqual([
      'beta',
      'gamma',
      'Alpha one',
      ...[...neverUsed].sort(byId).reverse(),
    ]);
    expect(await walk('sort=lastUsedAt', 2)).toEqual([
      ...[...neverUsed].sort(byId),
      'Alpha one',
      'gamma',
      'beta',
    ]);
  });

  it('sorts by requests in the usage API’s last 24 hours, as its hourly buckets sum them', async () => {
    const traffic = new Map<string, number>();
    for (const [name, id] of ids) {
      const usage = await call('get', `/consumer-api-key/${id}/usage?granularity=hour`);
      expect(usage.status).toBe(200);
      traffic.set(
        name,
        (usage.body.buckets as { requests: number }[]).reduce((s, b) => s + b.requests, 0),
      );
    }
    expect(Object.fromEntries([...traffic].filter(([, n]) => n > 0))).toEqual({
      delta: 7,
      gamma: 5,
      beta: 1,
    });
    const sorted = await walk('sort=-requests24h', 3);
    expect(sorted.slice(0, 3)).toEqual(['delta', 'gamma', 'beta']);
    expect(sorted).toHaveLength(ids.size);
    expect((await walk('sort=requests24h', 3)).slice(-3)).toEqual(['beta', 'gamma', 'delta']);
  });

  it('keeps the window of the first page: traffic counted later moves no key into a page already read', async () => {
    const first = await list('sort=-requests24h&limit=2');
    expect((first.body.apiKeys as Listed[]).map((k) => k.name)).toEqual(['delta', 'gamma']);
    // Two hours on, gamma's requests (23 hours before the first page) left the window of a fresh list;
    // the cursor still ranks by the first page's window, so beta follows and nothing repeats.
    const saved = now;
    now += 2 * HOUR;
    try {
      const next = await list(`sort=-requests24h&limit=1&cursor=${first.body.nextCursor}`);
      expect((next.body.apiKeys as Listed[]).map((k) => k.name)).toEqual(['beta']);
      const fresh = await list('sort=-requests24h&limit=2');
      expect((fresh.body.apiKeys as Listed[]).map((k) => k.name)).toEqual(['delta', 'beta']);
    } finally {
      now = saved;
    }
  });

  it('refuses a cursor issued for another order, or one altered', async () => {
    const byUse = await list('sort=-lastUsedAt&limit=1');
    const byAge = await list('limit=1');
    for (const query of [
      `sort=-createdAt&cursor=${byUse.body.nextCursor}`,
      `sort=-lastUsedAt&cursor=${byAge.body.nextCursor}`,
      `cursor=${byUse.body.nextCursor}`,
      `sort=-lastUsedAt&cursor=${byUse.body.nextCursor}A`,
    ]) {
      const res = await list(query);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_cursor');
    }
    const bad = await list('sort=name');
    expect(bad.status).toBe(400);
    expect(bad.body.details).toContainEqual(expect.objectContaining({ field: 'sort' }));
  });

  it('finds keys by the start of their name whatever its case; namePrefix stays case-sensitive', async () => {
    const found = async (query: string) =>
      ((await list(query)).body.apiKeys as Listed[]).map((k) => k.name).sort();
    expect(await found('name=alpha')).toEqual(['ALPHA two', 'Alpha one', 'alphabet']);
    expect(await found('name=ALPHA%20T')).toEqual(['ALPHA two']);
    expect(await found('namePrefix=alpha')).toEqual(['alphabet']);
    // % and _ are text, not patterns.
    expect(await found(`name=${encodeURIComponent('50%_')}`)).toEqual(['50%_off']);
    expect(await found(`name=${encodeURIComponent('5_')}`)).toEqual([]);
    expect(await found(`name=${encodeURIComponent('%')}`)).toEqual([]);
    expect(await found('name=alpha&sort=-createdAt')).toEqual(['ALPHA two', 'Alpha one', 'alphabet']);
    // Postgres lowers every letter; the embedded store A-Z only, as the document says.
    expect(await found(`name=${encodeURIComponent('éco')}`)).toEqual(
      sqlDialectOf(storage.handle.db).name === 'postgres' ? ['École'] : [],
    );
  });

  it('counts the keys that match when asked, and says when there are more than it counts', async () => {
    expect((await list('limit=2')).body.total).toBeUndefined();
    expect((await list('limit=2&count=true')).body.total).toEqual({ count: ids.size, exact: true });
    expect((await list('name=alpha&limit=1&count=true')).body.total).toEqual({ count: 3, exact: true });
    expect((await list('name=nobody&count=true')).body).toEqual({
      apiKeys: [],
      total: { count: 0, exact: true },
    });
    // Past the bound the count stops: more than MAX_COUNTED_KEYS.
    const keys = new KeyRepository(storage.handle.db);
    const extra = MAX_COUNTED_KEYS + 1 - ids.size;
    for (let i = 0; i < extra; i += 500) {
      await storage.handle.db
        .insertInto('api_keys')
        .values(
          Array.from({ length: Math.min(500, extra - i) }, (_, j) => ({
            id: `key_bulk${i + j}`,
            name: `bulk ${i + j}`,
            secret_hash: randomBytes(32),
            secret_ciphertext: randomBytes(60),
            created_at: new Date(now),
            last_updated: new Date(now),
          })) as never,
        )
        .execute();
    }
    expect(await keys.count({}, MAX_COUNTED_KEYS + 1)).toBe(MAX_COUNTED_KEYS + 1);
    expect((await list('limit=1&count=true')).body.total).toEqual({ count: MAX_COUNTED_KEYS, exact: false });
    await storage.handle.db.deleteFrom('api_keys').where('id', 'like', 'key_bulk%').execute();
  });

  it('finds the key a secret opens, from a body, and answers it without any secret', async () => {
    const res = documented(
      'post',
      '/tollgate/keys/lookup',
      await call('post', '/tollgate/keys/lookup', { body: { secret: secrets.get('beta')! } }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      apiKey: expect.objectContaining({ consumerApiKeyId: ids.get('beta'), name: 'beta' }),
      matched: 'current',
    });
    expect(JSON.stringify(res.body)).not.toContain('tg_');
    // Who found which key is logged; the secret is not.
    expect(logs.some((l) => l.includes(ids.get('beta')!) && l.includes('found by its secret'))).toBe(true);
    expect(logs.join('\n')).not.toContain(secrets.get('beta')!);

    // After a roll with grace, the old secret names the key as its previous one, until when it works.
    const rolled = await call('post', `/consumer-api-key/${ids.get('gamma')}/roll`, {
      body: { gracePeriodSeconds: 3600 },
    });
    const previous = await call('post', '/tollgate/keys/lookup', { body: { secret: secrets.get('gamma')! } });
    expect(previous.body).toEqual({
      apiKey: expect.objectContaining({ consumerApiKeyId: ids.get('gamma') }),
      matched: 'previous',
      previousSecretExpiresAt: rolled.body.previousSecretExpiresAt,
    });
    secrets.set('gamma', rolled.body.secret);

    // Refused (its table in src/management/resources/key-lookup proves how), never echoing what was sent.
    const notASecret = await call('post', '/tollgate/keys/lookup', { body: { secret: 'hunter2' } });
    expect(JSON.stringify(notASecret.body)).not.toContain('hunter2');
  });

  it('counts a secret that opens nothing as a wrong credential of the address, across lookups and sign-ins', async () => {
    const throttled = createManagementApp(
      managementDeps(storage.handle.db, {
        rootToken: ROOT_TOKEN,
        throttle: new AuthThrottle({ limit: 3, period: 'minute' }),
        clock: () => now,
      }),
    );
    const lookup = (secret: string) =>
      request(throttled)
        .post('/tollgate/keys/lookup')
        .set('Authorization', `Bearer ${ROOT_TOKEN}`)
        .send({ secret });
    expect((await lookup('tg_' + 'C'.repeat(43))).status).toBe(404);
    // A right secret is no miss.
    expect((await lookup(secrets.get('beta')!)).status).toBe(200);
    expect((await lookup('tg_' + 'D'.repeat(43))).status).toBe(404);
    expect(
      (await request(throttled).get('/tollgate/whoami').set('Authorization', 'Bearer wrong')).status,
    ).toBe(401);
    const refused = await lookup(secrets.get('beta')!);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('too_many_failed_attempts');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers any valid token its own type, name and scopes', async () => {
    const root = documented('get', '/tollgate/whoami', await call('get', '/tollgate/whoami'));
    expect(root.body).toEqual({
      type: 'root',
      tokenId: null,
      name: null,
      scopes: expect.arrayContaining(['keys:read', 'keys:secrets', 'tokens:write']),
      expiresAt: null,
    });
    const made = await call('post', '/tollgate/admin-tokens', {
      body: { name: 'support desk', scopes: ['usage:read', 'keys:read'], expiresAt: '2030-01-01T00:00:00Z' },
    });
    const self = documented(
      'get',
      '/tollgate/whoami',
      await call('get', '/tollgate/whoami', { token: made.body.secret }),
    );
    expect(self.body).toEqual({
      type: 'token',
      tokenId: made.body.id,
      name: 'support desk',
      scopes: ['keys:read', 'usage:read'],
      expiresAt: '2030-01-01T00:00:00Z',
    });
  });
});
