/**
 * `credits.low` and `credits.exhausted` (docs/guides/webhooks.md) from Tollgate as production builds it (buildAdapters,
 * buildApp) in process, in both modes: the embedded store with in-process counters, and Postgres with
 * the Redis limiter. A key holds a balance (written to its record before its first request, as the
 * credits API will write it); proxied requests spend it, and a real receiver that verifies with the
 * standardwebhooks library gets each event once, the same webhook-id again after a refused attempt.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildAdapters } from '../../src/adapters.js';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { balanceSet } from '../../src/plans/balance.js';
import { isoSeconds, windowAt } from '../../src/plans/window.js';
import { CreditRepository } from '../../src/store/credit-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { STORAGES, type Storage } from '../helpers/management-storage.js';
import { waitFor } from '../helpers/poll.js';
import { RecordingBackend } from '../helpers/proxy-harness.js';
import { REDIS_URL, testKeyPrefix } from '../helpers/services.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const MODES = {
  embedded: { storage: STORAGES.embedded, env: {} },
  'Redis + Postgres': {
    storage: STORAGES.postgres,
    env: { REDIS_URL, REDIS_KEY_PREFIX: testKeyPrefix() },
  },
};

describe.each(Object.keys(MODES) as (keyof typeof MODES)[])('credits events, %s', (mode) => {
  const rootToken = 'root-' + randomBytes(16).toString('hex');
  const backend = new RecordingBackend();
  const dataDir = mkdtempSync(join(tmpdir(), 'tg-credit-events-'));
  let storage: Storage;
  let app: App;
  let base: string;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    storage = await MODES[mode].storage();
    await migrate(storage.handle);
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      OPS_PORT: '0',
      DATA_DIR: dataDir,
      ROOT_TOKEN: rootToken,
      UPSTREAM_URL: `http://127.0.0.1:${await backend.listen()}`,
      ...MODES[mode].env,
    });
    const logger = createLogger('silent');
    const metrics = new Metrics();
    app = buildApp({
      config,
      logger,
      metrics,
      adapters: await buildAdapters(config, storage.handle, logger, metrics),
      rootToken,
      encryptionKeys: [randomBytes(32)],
    });
    base = `http://127.0.0.1:${(await app.listen()).port}`;
    receiver = await WebhookReceiver.start();
  }, 60_000);

  afterAll(async () => {
    await app?.shutdown();
    await Promise.all([backend.close(), receiver?.close()]);
    await storage?.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${rootToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('tells a key’s balance low below a tenth of its refill and exhausted at 0, once each, signed, with a stable webhook-id', async () => {
    receiver.answer = (attempt) => (attempt === 1 ? 500 : 204);
    const hook = await admin('POST', '/tollgate/webhooks', {
      url: receiver.url,
      events: ['credits.low', 'credits.exhausted'],
    });
    expect(hook.status).toBe(201);
    receiver.secret = hook.body.secret as string;
    const key = await admin('POST', '/consumer-api-key/create', { name: 'prepaid' });
    const keyId = key.body.id as string;
    const now = Date.now();
    const refill = { amount: 20, interval: 'day', dayOfMonth: 1 } as const;
    expect(
      await new CreditRepository(storage.handle.db).set(
        'key',
        keyId,
        balanceSet(0, 20, refill, null, now),
        1,
        new Date(now),
      ),
    ).toBe(true);

    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const res = await fetch(`${base}/v1/items`, {
        headers: { authorization: `Bearer ${key.body.secret}` },
      });
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    expect(statuses).toEqual([...Array<number>(20).fill(200), 429, 429]);

    await waitFor(
      async () => receiver.events.size,
      (n) => n === 2,
      { timeoutMs: 20_000, everyMs: 100 },
    );
    const resetTime = isoSeconds(windowAt('day', now).end);
    // Low below ⌈20 / 10⌉ = 2: the 19th request left 1; the 20th left 0.
    expect(receiver.ofType('credits.low').map((e) => e.data)).toEqual([
      { consumerApiKeyId: keyId, scope: 'key', remaining: 1, lowAt: 2, refill, resetTime },
    ]);
    expect(receiver.ofType('credits.exhausted').map((e) => e.data)).toEqual([
      { consumerApiKeyId: keyId, scope: 'key', remaining: 0, refill, resetTime },
    ]);
    expect(receiver.attempts.every((a) => a.verified)).toBe(true);
    for (const id of receiver.events.keys()) {
      const attempts = receiver.attemptsOf(id);
      expect(attempts.map((a) => a.answer)).toEqual([500, 204]);
      expect(attempts[1]!.body).toBe(attempts[0]!.body);
    }
  }, 60_000);
});
