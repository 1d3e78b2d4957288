/**
 * A DATA_DIR as Tollgate wrote it before the SQLite store: PGlite's folder with a row in every table,
 * written by today's repositories (PGlite speaks Postgres), and the generated encryption key beside it.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../../src/keys/secret.js';
import { ruleOf } from '../../src/plans/plan.js';
import { AdminTokenRepository } from '../../src/store/admin-token-repository.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { PGLITE_FOLDER } from '../../src/store/db.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { PlanRepository } from '../../src/store/plan-repository.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { emptyBucket, type KeyUsage } from '../../src/usage/usage.js';

export interface PgliteDataDir {
  /** The key's current secret, and the previous one, still in its grace after a roll. */
  readonly key: { readonly id: string; readonly secret: string; readonly previousSecret: string };
  readonly disabledKeyId: string;
  readonly planId: string;
  readonly adminToken: string;
  /** The usage batch PGlite applied, and the requests it holds for `key`. */
  readonly batchId: string;
  readonly requests: number;
}

const MINUTE = Date.UTC(2026, 10, 20, 14, 7);

export const GOLD_LIMITS = [
  ruleOf({ limit: 1_000_000, period: 'hour' }),
  ruleOf({ name: 'burst', limit: 1_000, period: 'second', algorithm: 'sliding' }),
];

function usageOf(requests: number): KeyUsage {
  return {
    endpoints: new Map([
      [
        '/v1/weather',
        {
          requests,
          successful: requests - 1,
          failed: 1,
          totalDurationMs: 12.5 * requests,
          cost: requests - 1,
        },
      ],
    ]),
    customers: new Map([['acme', { requests, successful: requests - 1, failed: 1 }]]),
    minutes: new Map([
      [
        MINUTE,
        {
          ...emptyBucket(),
          requests,
          successful: requests - 1,
          failed: 1,
          rateLimited: 1,
          totalDurationMs: 12.5 * requests,
          cost: requests - 1,
        },
      ],
    ]),
    days: new Map(),
    consumers: new Map(),
  };
}

export async function createPgliteDataDir(dataDir: string): Promise<PgliteDataDir> {
  mkdirSync(join(dataDir, PGLITE_FOLDER), { recursive: true });
  // As main.ts generates it.
  const encryptionKey = randomBytes(32);
  writeFileSync(join(dataDir, 'secret-encryption.key'), encryptionKey.toString('base64') + '\n', {
    mode: 0o600,
  });
  const handle = await openPglite(join(dataDir, PGLITE_FOLDER));
  try {
    await migrate(handle);
    const plans = new PlanRepository(handle.db);
    const keys = new KeyRepository(handle.db);
    const created = new Date('2026-11-01T08:00:00.123Z');
    const planId = 'gold';
    // Two limits (kept as JSON), and the seed's one limit (kept in "limit" and period alone).
    await plans.insert({ rateLimitId: planId, description: 'Gold', limits: GOLD_LIMITS, createdAt: created });
    await plans.insert({
      rateLimitId: 'unused',
      description: '',
      limits: [ruleOf({ limit: 5, period: 'second' })],
      createdAt: created,
    });

    const id = generateKeyId();
    const previousSecret = generateSecret();
    await keys.insert({
      id,
      name: 'mobile-app',
      secretHash: hashSecret(previousSecret),
      secretCiphertext: encryptSecret(previousSecret, encryptionKey),
      rateLimitId: planId,
      createdAt: created,
      externalId: 'cus_42',
      metadata: '{"tier":"gold","n":1}',
      expiresAt: new Date('2030-01-01T00:00:00Z'),
    });
    const secret = generateSecret();
    await keys.roll(
      id,
      { hash: hashSecret(secret), ciphertext: encryptSecret(secret, encryptionKey) },
      new Date('2030-01-01T00:00:00Z'),
      new Date('2026-11-02T00:00:00Z'),
    );
    await keys.markUsed(new Map([[id, Date.parse('2026-11-20T14:07:30Z')]]));
    const disabledKeyId = generateKeyId();
    const disabled = generateSecret();
    await keys.insert({
      id: disabledKeyId,
      name: 'old',
      secretHash: hashSecret(disabled),
      secretCiphertext: encryptSecret(disabled, encryptionKey),
      createdAt: created,
      enabled: false,
    });

    const batchId = 'batch-before-upgrade';
    const requests = 40;
    await new UsageRepository(handle.db).applyBatch(
      batchId,
      new Map([
        [id, usageOf(requests)],
        [disabledKeyId, usageOf(2)],
      ]),
    );

    const adminToken = 'tga_' + randomBytes(32).toString('base64url');
    const tokens = new AdminTokenRepository(handle.db);
    await tokens.insert({
      id: 'tok_ci',
      name: 'ci',
      scopes: ['keys:read', 'usage:read'],
      expiresAt: null,
      createdAt: created,
      tokenHash: hashSecret(adminToken),
    });
    const audit = new AuditRepository(handle.db);
    for (const [n, action] of (['plan.create', 'key.create', 'admin_token.create'] as const).entries()) {
      await audit.insert([
        {
          id: `aud_${n}`,
          time: new Date(created.getTime() + n),
          actor: n === 2 ? { type: 'token', id: 'tok_ci', name: 'ci' } : { type: 'root' },
          action,
          target: { type: action.split('.')[0]!, id: `target_${n}` },
          requestId: `req_${n}`,
          clientAddress: '192.0.2.1',
          changes: { before: null, after: JSON.stringify({ n }) },
        },
      ]);
    }
    return { key: { id, secret, previousSecret }, disabledKeyId, planId, adminToken, batchId, requests };
  } finally {
    await handle.close();
  }
}
