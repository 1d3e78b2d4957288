/**
 * Admin tokens, scopes and the audit log (contract section 9) through the management API in process,
 * on embedded PGlite and a real Postgres.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { sql } from 'kysely';
import request from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { PATHS, REQUIRED_SCOPES } from '../../src/management/routes.js';
import { SCOPES, type Scope } from '../../src/management/scopes.js';
import { createLogger } from '../../src/ops/logger.js';
import { AuthThrottle } from '../../src/proxy/auth-throttle.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { AuditRetention } from '../../src/store/audit-retention.js';
import { migrate } from '../../src/store/migrate.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { managementDeps, STORAGES, type Storage } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const logLines: string[] = [];
const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });
type Method = 'get' | 'post' | 'patch' | 'delete';

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('admin tokens and audit on %s storage', (kind) => {
  let storage: Storage;
  let app: Express;
  let now = Date.UTC(2026, 10, 22, 9, 0, 0);
  /** Every secret and token handed out, to prove none reaches the audit log or a log line. */
  const secrets: string[] = [ROOT_TOKEN];

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    app = createManagementApp(
      managementDeps(storage.handle.db, {
        throttle: new AuthThrottle({ limit: 20, period: 'minute' }),
        // The test's calls name their client in X-Forwarded-For, as a load balancer in front would.
        trustProxy: { hops: 1 },
        rootToken: ROOT_TOKEN,
        logger,
        clock: () => now,
      }),
    );
  }, 60_000);

  afterAll(() => storage.dispose());

  const call = (method: Method, path: string, token = ROOT_TOKEN, body?: unknown, address = '10.0.0.1') => {
    const req = request(app)[method](path).set('Authorization', `Bearer ${token}`).set('x-forwarded-for', address);
    return body === undefined ? req : req.send(body as object);
  };
  const id = () => randomBytes(5).toString('hex');

  async function token(scopes: readonly Scope[], expiresAt?: string): Promise<{ id: string; secret: string }> {
    const res = await call('post', '/tollgate/admin-tokens', ROOT_TOKEN, { name: `t-${id()}`, scopes, ...(expiresAt && { expiresAt }) });
    expect(res.status).toBe(201);
    secrets.push(res.body.secret);
    return res.body;
  }
  async function key(): Promise<string> {
    const res = await call('post', '/consumer-api-key/create', ROOT_TOKEN, { name: 'k' });
    secrets.push(res.body.secret);
    return res.body.id;
  }
  async function plan(): Promise<string> {
    const rateLimitId = `p-${id()}`;
    expect((await call('post', '/rate-limit/create', ROOT_TOKEN, { rateLimitId, limit: 5, period: 'hour' })).status).toBe(201);
    return rateLimitId;
  }

  /** A valid call of each operation, on objects of its own. */
  async function validCall(route: keyof typeof REQUIRED_SCOPES, method: Method): Promise<{ path: string; body?: unknown }> {
    switch (route) {
      case 'createKey': return { path: PATHS.createKey, body: { name: 'scoped' } };
      case 'keys': return { path: PATHS.keys };
      case 'key': return { path: `/consumer-api-key/${await key()}`, ...(method === 'patch' && { body: { name: 'renamed' } }) };
      case 'rollKey': return { path: `/consumer-api-key/${await key()}/roll`, body: { gracePeriodSeconds: 60 } };
      case 'createPlan': return { path: PATHS.createPlan, body: { rateLimitId: `p-${id()}`, limit: 1, period: 'day' } };
      case 'plans': return { path: PATHS.plans };
      case 'plan': return { path: `/rate-limit/${await plan()}`, ...(method === 'patch' && { body: { limit: 9 } }) };
      case 'applyPlan': return { path: PATHS.applyPlan, body: { consumerApiKeyId: await key(), rateLimitId: await plan() } };
      case 'removePlan': return { path: PATHS.removePlan, body: { consumerApiKeyId: await key() } };
      case 'adminTokens': return { path: PATHS.adminTokens, ...(method === 'post' && { body: { name: 'made', scopes: ['tokens:write'] } }) };
      case 'adminToken': return { path: `/tollgate/admin-tokens/${(await token(['keys:read'])).id}` };
      case 'auditLog': return { path: PATHS.auditLog };
      case 'keyUsage': return { path: `/consumer-api-key/${await key()}/usage` };
      case 'fleetUsage': return { path: PATHS.fleetUsage };
    }
  }

  const operations = Object.entries(REQUIRED_SCOPES).flatMap(([route, methods]) =>
    Object.entries(methods).map(([method, scope]) => [route as keyof typeof REQUIRED_SCOPES, method as Method, scope as Scope] as const),
  );

  it.each(operations)('%s %s: 403 insufficient_scope without %s, success with exactly it', async (route, method, scope) => {
    const without = await token(SCOPES.filter((s) => s !== scope));
    const refused = await call(method, (await validCall(route, method)).path, without.secret, (await validCall(route, method)).body);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: `This call needs the scope ${scope}`, code: 'insufficient_scope' });
    expect(refused.headers['www-authenticate']).toBe(`Bearer realm="tollgate", error="insufficient_scope", scope="${scope}"`);
    const only = await token([scope]);
    const { path, body } = await validCall(route, method);
    const allowed = await call(method, path, only.secret, body);
    expect([200, 201]).toContain(allowed.status);
    if (allowed.body?.secret) secrets.push(allowed.body.secret);
  });

  it('creates a token shown once and stored as a hash, lists it without secret, grants no scope it lacks', async () => {
    const res = await call('post', '/tollgate/admin-tokens', ROOT_TOKEN, { name: 'ci', scopes: ['keys:write', 'tokens:write'], expiresAt: '2030-01-01T00:00:00Z' });
    expect(checker.problems('post', '/tollgate/admin-tokens', res)).toEqual([]);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(/^tok_/), name: 'ci', scopes: ['keys:write', 'tokens:write'], expiresAt: '2030-01-01T00:00:00Z', createdAt: '2026-11-22T09:00:00Z', secret: expect.stringMatching(/^tga_[A-Za-z0-9_-]{43}$/) });
    secrets.push(res.body.secret);
    const stored = await sql<{ text: string }>`select row_to_json(t)::text as text from admin_tokens t`.execute(storage.handle.db);
    expect(stored.rows.map((r) => r.text).join('')).not.toContain(res.body.secret);
    const list = await call('get', '/tollgate/admin-tokens');
    expect(checker.problems('get', '/tollgate/admin-tokens', list)).toEqual([]);
    expect(list.body.adminTokens).toContainEqual({ id: res.body.id, name: 'ci', scopes: ['keys:write', 'tokens:write'], expiresAt: '2030-01-01T00:00:00Z', createdAt: '2026-11-22T09:00:00Z' });
    expect(JSON.stringify(list.body)).not.toContain('tga_');

    const beyond = await call('post', '/tollgate/admin-tokens', res.body.secret, { name: 'more', scopes: ['keys:write', 'plans:write'] });
    expect(beyond.status).toBe(403);
    expect(beyond.headers['www-authenticate']).toContain('scope="plans:write"');
    const within = await call('post', '/tollgate/admin-tokens', res.body.secret, { name: 'less', scopes: ['keys:write'] });
    expect(within.status).toBe(201);
    secrets.push(within.body.secret);
    for (const body of [{ name: 'x', scopes: [] }, { name: 'x', scopes: ['keys:admin'] }, { name: 'x', scopes: ['keys:read', 'keys:read'] }, { name: 'x', scopes: ['keys:read'], expiresAt: '2026-13-01T00:00:00Z' }]) {
      expect((await call('post', '/tollgate/admin-tokens', ROOT_TOKEN, body)).body.code).toBe('validation_failed');
    }
  });

  it('refuses a deleted token at once and an expired one from its instant', async () => {
    const t = await token(['keys:read']);
    expect((await call('get', '/consumer-api-key', t.secret)).status).toBe(200);
    const deleted = await call('delete', `/tollgate/admin-tokens/${t.id}`);
    expect(checker.problems('delete', '/tollgate/admin-tokens/{tokenId}', deleted)).toEqual([]);
    expect(deleted.body).toEqual({ id: t.id, message: expect.any(String) });
    const after = await call('get', '/consumer-api-key', t.secret);
    expect(after.status).toBe(401);
    expect(after.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await call('delete', `/tollgate/admin-tokens/${t.id}`)).status).toBe(404);

    const expiring = await token(['keys:read'], '2026-11-22T09:00:05Z');
    expect((await call('get', '/consumer-api-key', expiring.secret)).status).toBe(200);
    now += 5_000;
    expect((await call('get', '/consumer-api-key', expiring.secret)).status).toBe(401);
    now -= 5_000;
  });

  it('writes one entry per change, none for refused or invalid calls, never a secret', async () => {
    const actor = await token(['keys:write', 'plans:write', 'audit:read']);
    const before = (await call('get', '/tollgate/audit-log?limit=1000')).body.auditLog.length;
    const created = await call('post', '/consumer-api-key/create', actor.secret, { name: 'audited', metadata: { a: 1 } }, '203.0.113.9');
    secrets.push(created.body.secret);
    const keyId = created.body.id as string;
    const rolled = await call('post', `/consumer-api-key/${keyId}/roll`, actor.secret, { gracePeriodSeconds: 30 });
    secrets.push(rolled.body.secret);
    await call('patch', `/consumer-api-key/${keyId}`, actor.secret, { enabled: false });
    const planId = `p-${id()}`;
    await call('post', '/rate-limit/create', actor.secret, { rateLimitId: planId, limit: 3, period: 'day' });
    await call('post', '/api-keys/apply-rate-limit', actor.secret, { consumerApiKeyId: keyId, rateLimitId: planId });
    await call('patch', `/rate-limit/${planId}`, actor.secret, { limit: 4 });
    await call('post', '/api-keys/remove-rate-limit', actor.secret, { consumerApiKeyId: keyId });
    // Refused, invalid or changing nothing: no entries.
    await call('post', '/api-keys/remove-rate-limit', actor.secret, { consumerApiKeyId: keyId });
    await call('patch', `/consumer-api-key/${keyId}`, actor.secret, { bogus: true });
    await call('patch', '/consumer-api-key/key_none', actor.secret, { name: 'x' });
    await call('post', '/rate-limit/create', actor.secret, { rateLimitId: planId, limit: 3, period: 'day' });
    await call('delete', '/tollgate/admin-tokens/tok_none', actor.secret);
    await call('get', `/consumer-api-key/${keyId}`, 'tga_' + 'x'.repeat(43));
    await call('delete', `/rate-limit/${planId}`, actor.secret);
    await call('delete', `/consumer-api-key/${keyId}`, actor.secret);

    const log = await call('get', '/tollgate/audit-log?limit=1000', actor.secret);
    expect(checker.problems('get', '/tollgate/audit-log', log)).toEqual([]);
    const mine = log.body.auditLog.slice(0, log.body.auditLog.length - before);
    expect(mine.map((e: { action: string }) => e.action)).toEqual([
      'key.delete',
      'plan.delete',
      'key.remove_plan',
      'plan.update',
      'key.apply_plan',
      'plan.create',
      'key.update',
      'key.roll',
      'key.create',
    ]);
    const createEntry = mine.at(-1);
    expect(createEntry).toMatchObject({
      actor: { type: 'token', id: actor.id, name: expect.any(String) },
      target: { type: 'key', id: keyId },
      requestId: created.headers['x-request-id'],
      clientAddress: '203.0.113.9',
      changes: { before: null, after: { name: 'audited', enabled: true, metadata: { a: 1 }, rateLimitId: null, externalId: null, expiresAt: null } },
    });
    expect(mine[6]).toMatchObject({ action: 'key.update', changes: { before: { enabled: true }, after: { enabled: false } } });
    expect(mine[3]).toMatchObject({ action: 'plan.update', changes: { before: { limit: 3 }, after: { limit: 4 } } });
    const everything = JSON.stringify((await call('get', '/tollgate/audit-log?limit=1000')).body);
    for (const secret of secrets) expect(everything).not.toContain(secret);
    const stored = await sql<{ text: string }>`select string_agg(row_to_json(a)::text, '') as text from audit_log a`.execute(storage.handle.db);
    for (const secret of secrets) expect(stored.rows[0]!.text).not.toContain(secret);
    expect(stored.rows[0]!.text).not.toMatch(/tg_[A-Za-z0-9_-]{43}|tga_/);
  });

  it('filters by action, target, actor and time, newest first, one page at a time', async () => {
    const actor = await token(['plans:write', 'audit:read']);
    const ids = [];
    for (let i = 0; i < 3; i++) {
      now += 1_000;
      const planId = `f-${id()}`;
      ids.push(planId);
      await call('post', '/rate-limit/create', actor.secret, { rateLimitId: planId, limit: 1, period: 'day' });
    }
    const get = async (query: string) => (await call('get', `/tollgate/audit-log?${query}`)).body;
    expect((await get(`actorId=${actor.id}`)).auditLog.map((e: { target: { id: string } }) => e.target.id)).toEqual([...ids].reverse());
    expect((await get(`targetId=${ids[1]}`)).auditLog).toHaveLength(1);
    expect((await get(`actorId=${actor.id}&action=plan.create&from=${new Date(now - 1_000).toISOString().slice(0, 19)}Z`)).auditLog).toHaveLength(2);
    expect((await get(`actorId=${actor.id}&to=${new Date(now - 1_000).toISOString().slice(0, 19)}Z`)).auditLog).toHaveLength(1);
    const first = await get(`actorId=${actor.id}&limit=2`);
    const second = await get(`actorId=${actor.id}&limit=2&cursor=${first.nextCursor}`);
    expect([...first.auditLog, ...second.auditLog].map((e: { target: { id: string } }) => e.target.id)).toEqual([...ids].reverse());
    expect(second).not.toHaveProperty('nextCursor');
    for (const query of ['from=yesterday', 'to=2026-02-30T00:00:00Z', 'limit=0', 'cursor=zzz', 'who=me']) {
      expect((await call('get', `/tollgate/audit-log?${query}`)).status).toBe(400);
    }
  });

  it('stores a change and its entry together or neither', async () => {
    const keyId = await key();
    const entries = async () => (await call('get', `/tollgate/audit-log?targetId=${keyId}`)).body.auditLog.length;
    expect(await entries()).toBe(1);
    // The entry cannot be written: the change is rolled back with it.
    await sql`create function refuse() returns trigger language plpgsql as $$ begin raise exception 'refused by test'; end $$`.execute(storage.handle.db);
    await sql`create trigger refuse_audit before insert on audit_log for each row execute function refuse()`.execute(storage.handle.db);
    try {
      expect((await call('patch', `/consumer-api-key/${keyId}`, ROOT_TOKEN, { name: 'never' })).status).toBe(500);
    } finally {
      await sql`drop trigger refuse_audit on audit_log`.execute(storage.handle.db);
    }
    expect((await call('get', `/consumer-api-key/${keyId}`)).body.name).toBe('k');
    // The change cannot be written: no entry for it.
    await sql`create trigger refuse_key before update on api_keys for each row execute function refuse()`.execute(storage.handle.db);
    try {
      expect((await call('patch', `/consumer-api-key/${keyId}`, ROOT_TOKEN, { name: 'never' })).status).toBe(500);
    } finally {
      await sql`drop trigger refuse_key on api_keys`.execute(storage.handle.db);
      await sql`drop function refuse()`.execute(storage.handle.db);
    }
    expect(await entries()).toBe(1);
  });

  it('throttles wrong credentials per client address, the right one included, until the window ends', async () => {
    const address = '198.51.100.7';
    for (let i = 0; i < 20; i++) expect((await call('get', '/consumer-api-key', `wrong-${i}`, undefined, address)).status).toBe(401);
    const throttled = await call('get', '/consumer-api-key', ROOT_TOKEN, undefined, address);
    expect(throttled.status).toBe(429);
    expect(throttled.body.code).toBe('too_many_failed_attempts');
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another address is unaffected; the next window starts afresh.
    expect((await call('get', '/consumer-api-key', ROOT_TOKEN, undefined, '198.51.100.8')).status).toBe(200);
    now += 60_000;
    expect((await call('get', '/consumer-api-key', ROOT_TOKEN, undefined, address)).status).toBe(200);
  });

  it('deletes entries past AUDIT_RETENTION_DAYS', async () => {
    const audit = new AuditRepository(storage.handle.db);
    await audit.insert({ id: 'aud_old', time: new Date(now - 400 * 86_400_000), actor: { type: 'root' }, action: 'key.create', target: { type: 'key', id: 'key_old' }, requestId: 'r', clientAddress: '::1', changes: { before: null, after: {} } });
    const count = async () => (await sql<{ n: number }>`select count(*)::int as n from audit_log where id = 'aud_old'`.execute(storage.handle.db)).rows[0]!.n;
    expect(await count()).toBe(1);
    await new AuditRetention(audit, 365, logger).prune(now);
    expect(await count()).toBe(0);
    expect((await call('get', '/tollgate/audit-log?limit=1')).body.auditLog).toHaveLength(1);
  });

  it('never logs a secret or token', () => {
    const log = logLines.join('\n');
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
