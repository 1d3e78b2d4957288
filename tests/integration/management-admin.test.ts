/**
 * Admin tokens, scopes and the audit log (docs/guides/admin-tokens-and-audit.md) through the management API in process,
 * on the embedded SQLite store and a real Postgres.
 */
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { sql } from 'kysely';
import request from 'supertest';
import { createManagementApp } from '../../src/management/app.js';
import { SCOPES, type Scope } from '../../src/management/scopes.js';
import { createLogger } from '../../src/ops/logger.js';
import { AuthThrottle } from '../../src/proxy/auth-throttle.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { pruneAuditLog } from '../../src/store/audit-retention.js';
import { openPostgres } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import {
  managementDeps,
  refuseWrites,
  storedText,
  STORAGES,
  type Storage,
} from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const logLines: string[] = [];
const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });
type Method = 'get' | 'post' | 'patch' | 'delete';

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])(
  'admin tokens and audit on %s storage',
  (kind) => {
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
      const agent = request(app);
      const req = agent[method](path).set('Authorization', `Bearer ${token}`).set('x-forwarded-for', address);
      return body === undefined ? req : req.send(body as object);
    };
    const id = () => randomBytes(5).toString('hex');

    async function token(
      scopes: readonly Scope[],
      expiresAt?: string,
    ): Promise<{ id: string; secret: string }> {
      const res = await call('post', '/tollgate/admin-tokens', ROOT_TOKEN, {
        name: `t-${id()}`,
        scopes,
        ...(expiresAt && { expiresAt }),
      });
      expect(res.status).toBe(201);
      secrets.push(res.body.secret);
      return res.body;
    }
    async function key(): Promise<string> {
      const res = await call('post', '/consumer-api-key/create', ROOT_TOKEN, { name: 'k' });
      secrets.push(res.body.secret);
      return res.body.id;
    }

    if (kind === 'postgres') {
      it('verifyKey, which writes nothing, decides while the database refuses writes', async () => {
        const secret = (await call('post', '/consumer-api-key/create', ROOT_TOKEN, { name: 'k' })).body
          .secret;
        secrets.push(secret);
        const readOnly = await openPostgres(
          `${storage.url!}?options=${encodeURIComponent('-c default_transaction_read_only=on')}`,
        );
        try {
          const refusing = createManagementApp(
            managementDeps(readOnly.db, { rootToken: ROOT_TOKEN, logger }),
          );
          const res = await request(refusing)
            .post('/tollgate/verify')
            .set('Authorization', `Bearer ${ROOT_TOKEN}`)
            .send({ key: secret });
          expect([res.status, res.body.valid]).toEqual([200, true]);
          expect(checker.problems('post', '/tollgate/verify', res)).toEqual([]);
        } finally {
          await readOnly.close();
        }
      });
    }

    it('creates a token shown once and stored as a hash, lists it without secret, grants no scope it lacks', async () => {
      const res = await call('post', '/tollgate/admin-tokens', ROOT_TOKEN, {
        name: 'ci',
        scopes: ['keys:write', 'tokens:write'],
        expiresAt: '2030-01-01T00:00:00Z',
      });
      expect(checker.problems('post', '/tollgate/admin-tokens', res)).toEqual([]);
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^tok_/),
        name: 'ci',
        scopes: ['keys:write', 'tokens:write'],
        expiresAt: '2030-01-01T00:00:00Z',
        createdAt: '2026-11-22T09:00:00Z',
        secret: expect.stringMatching(/^tga_[A-Za-z0-9_-]{43}$/),
      });
      secrets.push(res.body.secret);
      expect(await storedText(storage.handle.db, 'admin_tokens')).not.toContain(res.body.secret);
      const list = await call('get', '/tollgate/admin-tokens');
      expect(checker.problems('get', '/tollgate/admin-tokens', list)).toEqual([]);
      expect(list.body.adminTokens).toContainEqual({
        id: res.body.id,
        name: 'ci',
        scopes: ['keys:write', 'tokens:write'],
        expiresAt: '2030-01-01T00:00:00Z',
        createdAt: '2026-11-22T09:00:00Z',
      });
      expect(JSON.stringify(list.body)).not.toContain('tga_');

      const beyond = await call('post', '/tollgate/admin-tokens', res.body.secret, {
        name: 'more',
        scopes: ['keys:write', 'plans:write'],
      });
      // Refused (its table in src/management/resources/admin-tokens proves how), naming what it lacks.
      expect(beyond.headers['www-authenticate']).toContain('scope="plans:write"');
      const within = await call('post', '/tollgate/admin-tokens', res.body.secret, {
        name: 'less',
        scopes: ['keys:write'],
        expiresAt: '2029-06-01T00:00:00Z',
      });
      expect(within.status).toBe(201);
      secrets.push(within.body.secret);
      for (const body of [
        { name: 'x', scopes: [] },
        { name: 'x', scopes: ['keys:admin'] },
        { name: 'x', scopes: ['keys:read', 'keys:read'] },
        { name: 'x', scopes: ['keys:read'], expiresAt: '2026-13-01T00:00:00Z' },
      ]) {
        expect((await call('post', '/tollgate/admin-tokens', ROOT_TOKEN, body)).body.code).toBe(
          'validation_failed',
        );
      }
    });

    it('lets a token create only tokens within its scopes that expire in the future and no later than itself', async () => {
      const creator = await token(['tokens:write', 'keys:read'], '2026-11-22T10:00:00Z');
      const create = (body: object) =>
        call('post', '/tollgate/admin-tokens', creator.secret, { name: `c-${id()}`, ...body });

      const forever = await create({ scopes: ['tokens:write', 'keys:read'] });
      expect(forever.body).toEqual({
        error: expect.stringContaining('2026-11-22T10:00:00Z'),
        code: 'token_outlives_caller',
      });
      expect(checker.problems('post', '/tollgate/admin-tokens', forever)).toEqual([]);
      const later = await create({ scopes: ['keys:read'], expiresAt: '2026-11-22T10:00:01Z' });
      expect(later.body.code).toBe('token_outlives_caller');
      const sameEnd = await create({
        scopes: ['tokens:write', 'keys:read'],
        expiresAt: '2026-11-22T10:00:00Z',
      });
      expect(sameEnd.status).toBe(201);
      secrets.push(sameEnd.body.secret);

      for (const expiresAt of ['2000-01-01T00:00:00Z', '2026-11-22T09:00:00Z']) {
        const past = await call('post', '/tollgate/admin-tokens', ROOT_TOKEN, {
          name: 'dead',
          scopes: ['keys:read'],
          expiresAt,
        });
        expect(past.status).toBe(400);
        expect(past.body).toEqual({
          error: expect.any(String),
          code: 'validation_failed',
          details: [{ field: 'expiresAt', message: 'must be in the future' }],
        });
        expect(checker.problems('post', '/tollgate/admin-tokens', past)).toEqual([]);
      }
      // Nothing refused was stored.
      const names = (await call('get', '/tollgate/admin-tokens')).body.adminTokens.map(
        (t: { name: string }) => t.name,
      );
      expect(names).not.toContain('dead');
      expect(names.filter((n: string) => n.startsWith('c-'))).toHaveLength(1);
    });

    it('lets a token delete only tokens whose scopes it holds all of', async () => {
      const broad = await token(SCOPES);
      const narrow = await token(['tokens:write']);
      const log = async () =>
        (await call('get', `/tollgate/audit-log?targetId=${broad.id}`)).body.auditLog.length;
      const refused = await call('delete', `/tollgate/admin-tokens/${broad.id}`, narrow.secret);
      expect(refused.body).toEqual({ error: expect.stringContaining('lacks'), code: 'insufficient_scope' });
      expect(refused.headers['www-authenticate']).toMatch(
        /error="insufficient_scope", scope="(keys|plans|usage|audit):/,
      );
      expect(checker.problems('delete', '/tollgate/admin-tokens/{tokenId}', refused)).toEqual([]);
      // Still there, still working, and nothing recorded but its creation.
      expect((await call('get', '/consumer-api-key', broad.secret)).status).toBe(200);
      expect(await log()).toBe(1);

      const peer = await token(['tokens:write']);
      expect((await call('delete', `/tollgate/admin-tokens/${peer.id}`, narrow.secret)).status).toBe(200);
      expect((await call('delete', `/tollgate/admin-tokens/${broad.id}`, broad.secret)).status).toBe(200);
      expect((await call('get', '/consumer-api-key', broad.secret)).status).toBe(401);
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
      const again = await call('delete', `/tollgate/admin-tokens/${t.id}`);
      expect(again.body).toEqual({ error: 'No admin token has that id', code: 'admin_token_not_found' });

      const expiring = await token(['keys:read'], '2026-11-22T09:00:05Z');
      expect((await call('get', '/consumer-api-key', expiring.secret)).status).toBe(200);
      now += 5_000;
      expect((await call('get', '/consumer-api-key', expiring.secret)).status).toBe(401);
      now -= 5_000;
    });

    it('writes one entry per change, none for refused or invalid calls, never a secret', async () => {
      const actor = await token(['keys:write', 'plans:write', 'audit:read', 'tokens:write']);
      const before = (await call('get', '/tollgate/audit-log?limit=1000')).body.auditLog.length;
      const created = await call(
        'post',
        '/consumer-api-key/create',
        actor.secret,
        { name: 'audited', metadata: { a: 1 } },
        '203.0.113.9',
      );
      secrets.push(created.body.secret);
      const keyId = created.body.id as string;
      const rolled = await call('post', `/consumer-api-key/${keyId}/roll`, actor.secret, {
        gracePeriodSeconds: 30,
      });
      secrets.push(rolled.body.secret);
      await call('patch', `/consumer-api-key/${keyId}`, actor.secret, { enabled: false });
      const planId = `p-${id()}`;
      await call('post', '/rate-limit/create', actor.secret, {
        rateLimitId: planId,
        limit: 3,
        period: 'day',
      });
      await call('post', '/api-keys/apply-rate-limit', actor.secret, {
        consumerApiKeyId: keyId,
        rateLimitId: planId,
      });
      await call('patch', `/rate-limit/${planId}`, actor.secret, { limit: 4 });
      await call('post', '/api-keys/remove-rate-limit', actor.secret, { consumerApiKeyId: keyId });
      // Refused, invalid or changing nothing: no entries.
      await call('post', '/api-keys/remove-rate-limit', actor.secret, { consumerApiKeyId: keyId });
      await call('patch', `/consumer-api-key/${keyId}`, actor.secret, { bogus: true });
      await call('patch', '/consumer-api-key/key_none', actor.secret, { name: 'x' });
      await call('post', '/rate-limit/create', actor.secret, {
        rateLimitId: planId,
        limit: 3,
        period: 'day',
      });
      await call('delete', '/tollgate/admin-tokens/tok_none', actor.secret);
      await call('get', `/consumer-api-key/${keyId}`, 'tga_' + 'x'.repeat(43));
      // A forced plan delete: an entry for each key it unbinds, then the plan's.
      const other = await call('post', '/consumer-api-key/create', actor.secret, { name: 'other' });
      secrets.push(other.body.secret);
      for (const consumerApiKeyId of [keyId, other.body.id])
        await call('post', '/api-keys/apply-rate-limit', actor.secret, {
          consumerApiKeyId,
          rateLimitId: planId,
        });
      await call('post', '/api-keys/apply-rate-limit', actor.secret, {
        consumerApiKeyId: keyId,
        rateLimitId: planId,
      });
      expect((await call('delete', `/rate-limit/${planId}`, actor.secret)).status).toBe(409);
      const forced = await call('delete', `/rate-limit/${planId}?force=true`, actor.secret);
      expect(forced.status).toBe(200);
      const made = await call('post', '/tollgate/admin-tokens', actor.secret, {
        name: 'made-by-actor',
        scopes: ['keys:write'],
      });
      secrets.push(made.body.secret);
      expect(
        (
          await call('post', '/tollgate/admin-tokens', actor.secret, {
            name: 'too-broad',
            scopes: ['usage:read'],
          })
        ).status,
      ).toBe(403);
      await call('delete', `/tollgate/admin-tokens/${made.body.id}`, actor.secret);
      await call('delete', `/consumer-api-key/${keyId}`, actor.secret);

      const log = await call('get', '/tollgate/audit-log?limit=1000', actor.secret);
      expect(checker.problems('get', '/tollgate/audit-log', log)).toEqual([]);
      const mine = log.body.auditLog.slice(0, log.body.auditLog.length - before);
      expect(mine.map((e: { action: string }) => e.action)).toEqual([
        'key.delete',
        'admin_token.delete',
        'admin_token.create',
        'plan.delete',
        'key.remove_plan',
        'key.remove_plan',
        'key.apply_plan',
        'key.apply_plan',
        'key.create',
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
        changes: {
          before: null,
          after: {
            name: 'audited',
            enabled: true,
            metadata: { a: 1 },
            rateLimitId: null,
            externalId: null,
            expiresAt: null,
          },
        },
      });
      expect(mine[13]).toMatchObject({
        action: 'key.update',
        changes: { before: { enabled: true }, after: { enabled: false } },
      });
      expect(mine[10]).toMatchObject({
        action: 'plan.update',
        changes: {
          before: { limits: [{ limit: 3, period: 'day' }] },
          after: { limits: [{ limit: 4, period: 'day' }] },
        },
      });
      const tokenView = { name: 'made-by-actor', scopes: ['keys:write'], expiresAt: null };
      expect(mine[2]).toMatchObject({
        target: { type: 'admin_token', id: made.body.id },
        changes: { before: null, after: tokenView },
      });
      expect(mine[1]).toMatchObject({
        target: { type: 'admin_token', id: made.body.id },
        changes: { before: tokenView, after: null },
      });
      // The forced delete: one request, the plan's entry and one per key it unbound, each key's trail showing it.
      const forcedRequest = forced.headers['x-request-id'];
      expect(mine[3]).toMatchObject({
        target: { type: 'plan', id: planId },
        requestId: forcedRequest,
        changes: { before: { rateLimitId: planId, keyCount: 2 }, after: null },
      });
      const unbinding = mine.slice(4, 6);
      expect(unbinding.map((e: { target: { id: string } }) => e.target.id).sort()).toEqual(
        [keyId, other.body.id].sort(),
      );
      for (const e of unbinding) {
        expect(e).toMatchObject({
          requestId: forcedRequest,
          actor: { type: 'token', id: actor.id },
          changes: { before: { rateLimitId: planId }, after: { rateLimitId: null } },
        });
      }
      const trail = (await call('get', `/tollgate/audit-log?targetId=${other.body.id}`)).body.auditLog.map(
        (e: { action: string }) => e.action,
      );
      expect(trail).toEqual(['key.remove_plan', 'key.apply_plan', 'key.create']);

      const everything = JSON.stringify((await call('get', '/tollgate/audit-log?limit=1000')).body);
      for (const secret of secrets) expect(everything).not.toContain(secret);
      const stored = await storedText(storage.handle.db, 'audit_log');
      for (const secret of secrets) expect(stored).not.toContain(secret);
      expect(stored).not.toMatch(/tg_[0-9A-Za-z]{36}|tg_[A-Za-z0-9_-]{43}|tga_/);
    });

    it('filters by action, target, actor and time, newest first, one page at a time', async () => {
      const actor = await token(['plans:write', 'audit:read']);
      const ids = [];
      for (let i = 0; i < 3; i++) {
        now += 1_000;
        const planId = `f-${id()}`;
        ids.push(planId);
        await call('post', '/rate-limit/create', actor.secret, {
          rateLimitId: planId,
          limit: 1,
          period: 'day',
        });
      }
      const get = async (query: string) => (await call('get', `/tollgate/audit-log?${query}`)).body;
      expect(
        (await get(`actorId=${actor.id}`)).auditLog.map((e: { target: { id: string } }) => e.target.id),
      ).toEqual([...ids].reverse());
      expect((await get(`targetId=${ids[1]}`)).auditLog).toHaveLength(1);
      expect(
        (
          await get(
            `actorId=${actor.id}&action=plan.create&from=${new Date(now - 1_000).toISOString().slice(0, 19)}Z`,
          )
        ).auditLog,
      ).toHaveLength(2);
      expect(
        (await get(`actorId=${actor.id}&to=${new Date(now - 1_000).toISOString().slice(0, 19)}Z`)).auditLog,
      ).toHaveLength(1);
      const first = await get(`actorId=${actor.id}&limit=2`);
      const second = await get(`actorId=${actor.id}&limit=2&cursor=${first.nextCursor}`);
      expect(
        [...first.auditLog, ...second.auditLog].map((e: { target: { id: string } }) => e.target.id),
      ).toEqual([...ids].reverse());
      expect(second).not.toHaveProperty('nextCursor');
      // The root token's changes: actorId=root.
      const byRoot = await call('post', '/rate-limit/create', ROOT_TOKEN, {
        rateLimitId: `r-${id()}`,
        limit: 1,
        period: 'day',
      });
      const rootEntries = (await get('actorId=root&limit=1000')).auditLog;
      expect(rootEntries.length).toBeGreaterThan(0);
      expect(rootEntries.every((e: { actor: { type: string } }) => e.actor.type === 'root')).toBe(true);
      expect(rootEntries[0]).toMatchObject({
        action: 'plan.create',
        target: { id: byRoot.body.rateLimitId },
        actor: { type: 'root' },
      });
      expect(rootEntries[0].actor).not.toHaveProperty('id');
      // A bad from, a page of none and a cursor not issued here: the operation's table proves those.
      for (const query of ['to=2026-02-30T00:00:00Z', 'who=me']) {
        expect((await call('get', `/tollgate/audit-log?${query}`)).status).toBe(400);
      }
    });

    it('records a sane x-request-id as sent, and replaces any other with one of its own', async () => {
      const sent = async (requestId: string) => {
        const res = await request(app)
          .post('/consumer-api-key/create')
          .set('Authorization', `Bearer ${ROOT_TOKEN}`)
          .set('x-request-id', requestId)
          .send({ name: 'traced' });
        secrets.push(res.body.secret);
        const [entry] = (await call('get', `/tollgate/audit-log?targetId=${res.body.id}`)).body.auditLog;
        expect(entry.requestId).toBe(res.headers['x-request-id']);
        return entry.requestId as string;
      };
      expect(await sent('lb-7f3a:2026/11/22+x=y@edge.1')).toBe('lb-7f3a:2026/11/22+x=y@edge.1');
      // Anything a log line or a viewer could misread (control characters never get past the HTTP parser).
      for (const hostile of ['a b', 'a\tb', '"}, {"admin": true', '<script>', 'x'.repeat(129)]) {
        expect(await sent(hostile)).toMatch(
          /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        );
      }
    });

    it('stores a change and its entry together or neither', async () => {
      const keyId = await key();
      const entries = async () =>
        (await call('get', `/tollgate/audit-log?targetId=${keyId}`)).body.auditLog.length;
      expect(await entries()).toBe(1);
      // The entry cannot be written: the change is rolled back with it.
      const allowAudit = await refuseWrites(storage.handle.db, 'refuse_audit', 'audit_log', 'insert');
      try {
        expect(
          (await call('patch', `/consumer-api-key/${keyId}`, ROOT_TOKEN, { name: 'never' })).status,
        ).toBe(500);
      } finally {
        await allowAudit();
      }
      expect((await call('get', `/consumer-api-key/${keyId}`)).body.name).toBe('k');
      // The change cannot be written: no entry for it.
      const allowUpdates = await refuseWrites(storage.handle.db, 'refuse_key', 'api_keys', 'update');
      try {
        expect(
          (await call('patch', `/consumer-api-key/${keyId}`, ROOT_TOKEN, { name: 'never' })).status,
        ).toBe(500);
      } finally {
        await allowUpdates();
      }
      expect(await entries()).toBe(1);
    });

    it('throttles wrong credentials per client address, the right one included, until the window ends', async () => {
      const address = '198.51.100.7';
      for (let i = 0; i < 20; i++)
        expect((await call('get', '/consumer-api-key', `wrong-${i}`, undefined, address)).status).toBe(401);
      const throttled = await call('get', '/consumer-api-key', ROOT_TOKEN, undefined, address);
      expect(throttled.status).toBe(429);
      expect(throttled.body.code).toBe('too_many_failed_attempts');
      expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Another address is unaffected; the next window starts afresh.
      expect((await call('get', '/consumer-api-key', ROOT_TOKEN, undefined, '198.51.100.8')).status).toBe(
        200,
      );
      now += 60_000;
      expect((await call('get', '/consumer-api-key', ROOT_TOKEN, undefined, address)).status).toBe(200);
    });

    it('counts one address however the load balancer spells it', async () => {
      const spellings = ['2001:DB8::7', '2001:db8:0:0:0:0:0:7', '::FFFF:198.51.100.17', '::ffff:c633:6411'];
      // 10 wrong tokens from each spelling: 20 from each of the two addresses.
      for (let i = 0; i < 40; i++)
        expect(
          (await call('get', '/consumer-api-key', `wrong-${i}`, undefined, spellings[i % 4])).status,
        ).toBe(401);
      for (const address of [...spellings, '2001:db8::7', '198.51.100.17']) {
        const throttled = await call('get', '/consumer-api-key', ROOT_TOKEN, undefined, address);
        expect([address, throttled.status, throttled.body.code]).toEqual([
          address,
          429,
          'too_many_failed_attempts',
        ]);
      }
      now += 60_000;
    });

    it('checks no more than 20 wrong credentials when they all arrive at once', async () => {
      const address = '198.51.100.9';
      // Admin-token-shaped guesses are looked up in the database: their answers overlap.
      const guesses = Array.from({ length: 40 }, (_, i) =>
        i % 2 ? 'tga_' + randomBytes(32).toString('base64url') : `wrong-${i}`,
      );
      const statuses = await Promise.all(
        guesses.map(
          async (guess) => (await call('get', '/consumer-api-key', guess, undefined, address)).status,
        ),
      );
      expect(statuses.filter((s) => s === 401)).toHaveLength(20);
      expect(statuses.filter((s) => s === 429)).toHaveLength(20);
      now += 60_000;
    });

    it('deletes entries past AUDIT_RETENTION_DAYS', async () => {
      const audit = new AuditRepository(storage.handle.db);
      await audit.insert([
        {
          id: 'aud_old',
          time: new Date(now - 400 * 86_400_000),
          actor: { type: 'root' },
          action: 'key.create',
          target: { type: 'key', id: 'key_old' },
          requestId: 'r',
          clientAddress: '::1',
          changes: { before: null, after: '{}' },
        },
      ]);
      const count = async () =>
        (
          await sql<{
            n: number;
          }>`select cast(count(*) as integer) as n from audit_log where id = 'aud_old'`.execute(
            storage.handle.db,
          )
        ).rows[0]!.n;
      expect(await count()).toBe(1);
      await pruneAuditLog(audit, 365, logger, now);
      expect(await count()).toBe(0);
      expect((await call('get', '/tollgate/audit-log?limit=1')).body.auditLog).toHaveLength(1);
    });

    it('never logs a secret or token', () => {
      const log = logLines.join('\n');
      for (const secret of secrets) expect(log).not.toContain(secret);
    });
  },
);
