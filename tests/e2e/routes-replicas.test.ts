/**
 * The route table at run time (docs/guides/routes.md) on the built service: a route created, changed or
 * deleted through one replica is in force on all three (Redis and Postgres) within 1 s; the embedded
 * single node uses its own at once.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { testKeyPrefix } from '../helpers/services.js';
import { hit, msUntilSeenEverywhere, startFleet, type Fleet } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

/**
 * Polls every replica until a request under `path` reaches `backend` from each as `forwarded` (the
 * path the backend sees: by default the same). Called once the change is answered; resolves how long
 * after that the slowest replica was sent its first request that reached (msUntilSeenEverywhere).
 */
async function inForceOnAll(
  replicas: readonly Tollgate[],
  secret: string,
  path: string,
  backend: Backend,
  forwarded = path,
): Promise<number> {
  return msUntilSeenEverywhere(
    performance.now(),
    replicas.map((replica, i) => {
      // Marked in the query, which reaches the backend whatever the route does to the path.
      const marker = `probe=${randomBytes(6).toString('hex')}`;
      return async () => {
        await hit(replica, secret, `${path}/replica-${i}?${marker}`);
        return backend.received.some((r) => r.url === `${forwarded}/replica-${i}?${marker}`);
      };
    }),
    { timeoutMs: 3_000, everyMs: 10 },
  );
}

describe('routes across three replicas (Redis and Postgres)', () => {
  let fleet: Fleet;
  let other: Backend;
  let secret: string;

  beforeAll(async () => {
    [fleet, other] = await Promise.all([startFleet(3), startBackend()]);
    secret = (await fleet.members[0]!.admin('POST', '/consumer-api-key/create', { name: 'routed' })).body
      .secret;
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await other?.close();
  }, 60_000);

  it('puts a route created on one replica in force on all three within 1 s, and its changes and deletion too', async () => {
    const [first, second, third] = fleet.members;
    // Before: the catch-all.
    expect(await hit(third!, secret, '/v2/before')).toBe(200);
    expect(fleet.backend.received.some((r) => r.url === '/v2/before')).toBe(true);

    const created = await second!.admin('POST', '/tollgate/routes', {
      routeId: 'v2',
      match: { pathPrefix: '/v2' },
      upstreamUrl: other.url + '/base',
      stripPrefix: true,
    });
    expect(created.status).toBe(201);
    expect(await inForceOnAll(fleet.members, secret, '/v2/created', other, '/base/created')).toBeLessThan(
      1_000,
    );

    expect((await third!.admin('PATCH', '/tollgate/routes/v2', { stripPrefix: false })).status).toBe(200);
    expect(await inForceOnAll(fleet.members, secret, '/v2/patched', other, '/base/v2/patched')).toBeLessThan(
      1_000,
    );

    expect((await first!.admin('DELETE', '/tollgate/routes/v2')).status).toBe(200);
    expect(await inForceOnAll(fleet.members, secret, '/v2/deleted', fleet.backend)).toBeLessThan(1_000);
  });

  it('brings a change whose message nobody heard to every replica within 1 s, from the recorded changes', async () => {
    // A replica publishing under another Redis prefix: its change messages reach nobody, as when it
    // cannot reach Redis at the moment of the change.
    const [deaf] = await fleet.replicas.start(1, { REDIS_KEY_PREFIX: testKeyPrefix() });
    expect(
      (
        await deaf!.admin('POST', '/tollgate/routes', {
          routeId: 'unheard',
          match: { pathPrefix: '/unheard' },
          upstreamUrl: other.url,
        })
      ).status,
    ).toBe(201);
    expect(await inForceOnAll(fleet.members, secret, '/unheard', other)).toBeLessThan(1_000);
  });
});

describe('routes on the embedded single node', () => {
  let tollgate: Tollgate;
  let catchAll: Backend;
  let routed: Backend;
  let env: Record<string, string>;

  beforeAll(async () => {
    [catchAll, routed] = await Promise.all([startBackend(), startBackend()]);
    env = {
      UPSTREAM_URL: catchAll.url,
      DATA_DIR: mkdtempSync(join(tmpdir(), 'tollgate-routes-')),
      ROOT_TOKEN: 'root-routes-' + Date.now(),
    };
    tollgate = await startTollgate(env);
  }, 120_000);

  afterAll(async () => {
    await tollgate?.stop();
    await Promise.all([catchAll?.close(), routed?.close()]);
    expectNoSecretsLogged();
  }, 60_000);

  it('puts a route in force within 1 s, survives a restart with the table, and sends the rest to the catch-all', async () => {
    const secret = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'routed' })).body
      .secret as string;
    expect(
      (
        await tollgate.admin('POST', '/tollgate/routes', {
          routeId: 'search',
          match: { pathPrefix: '/v1/search' },
          upstreamUrl: routed.url,
        })
      ).status,
    ).toBe(201);
    expect(await inForceOnAll([tollgate], secret, '/v1/search', routed)).toBeLessThan(1_000);
    expect(await hit(tollgate, secret, '/v1/lookup')).toBe(200);
    expect(catchAll.received.map((r) => r.url)).toContain('/v1/lookup');

    // The table is read before the restarted node serves: its first request is routed.
    expect(await tollgate.stop()).toBe(0);
    tollgate = await startTollgate(env);
    expect(await hit(tollgate, secret, '/v1/search/after-restart')).toBe(200);
    expect(routed.received.map((r) => r.url)).toContain('/v1/search/after-restart');
  });
});
