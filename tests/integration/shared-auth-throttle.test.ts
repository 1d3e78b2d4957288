/**
 * The failed-credential throttle shared through Redis (docs/guides/admin-tokens-and-audit.md: a shared counter, not N
 * times the budget): two replicas' throttles over a private redis-server, guesses arriving all at
 * once, valid credentials, and Redis gone.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/ops/logger.js';
import type { AllowedAttempt, Attempt } from '../../src/proxy/auth-throttle.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { SharedAuthThrottle } from '../../src/proxy/shared-auth-throttle.js';
import { windowAt } from '../../src/plans/window.js';
import { RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/poll.js';
import { COUNTING_REDIS } from '../helpers/services.js';

const policy = { limit: 20, period: 'minute' } as const;
const warnings: string[] = [];
const logger = createLogger('warn', { write: (line: string) => void warnings.push(line) });

let server: RedisServer;
const connections: RedisConnections[] = [];

/** One replica's throttle, on its own connection. */
async function replica(prefix: string): Promise<SharedAuthThrottle> {
  const redis = connectRedis({ redisUrl: server.url, redisClusterNodes: undefined }, logger, COUNTING_REDIS);
  connections.push(redis);
  expect(await redis.ready(5_000)).toBe(true);
  return new SharedAuthThrottle(redis.client, prefix, policy, logger);
}

beforeAll(async () => {
  server = await RedisServer.start();
}, 30_000);

afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
  await server.destroy();
});

/** A plain client of the private server, to read what the throttles stored there. */
async function replicaClient() {
  const redis = connectRedis({ redisUrl: server.url, redisClusterNodes: undefined }, logger, COUNTING_REDIS);
  connections.push(redis);
  expect(await redis.ready(5_000)).toBe(true);
  return redis.client;
}

/** Waits until the shared count of `address` in the window of `at` reads `count` (throttles of `prefix`). */
async function sharedCount(prefix: string, address: string, at: number, count: string): Promise<void> {
  const client = await replicaClient();
  const key = `${prefix}{${address}}:${windowAt(policy.period, at).start}`;
  await waitFor(
    () => client.get(key),
    (value) => value === count,
    { what: `${key} to read ${count}` },
  );
}

/** A time inside one minute, so every attempt of a test falls in one window. */
const now = () => Math.floor(Date.now() / 60_000) * 60_000 + 1_000;

/** `n` attempts begun together, round-robin over `replicas`; each allowed one settles as a wrong credential once all have answered. */
async function guessesAtOnce(
  replicas: readonly SharedAuthThrottle[],
  address: string,
  n: number,
  at: number,
): Promise<number> {
  const answers: Attempt[] = await Promise.all(
    Array.from({ length: n }, (_, i) => replicas[i % replicas.length]!.attempt(address, at, `guess-${i}`)),
  );
  const allowed = answers.filter((a): a is AllowedAttempt => a.allowed);
  for (const a of allowed) a.settle(true);
  return allowed.length;
}

describe('SharedAuthThrottle', () => {
  it('checks the limit plus at most one guess per replica when guesses reach two replicas all at once', async () => {
    const [a, b] = [await replica('st1:'), await replica('st1:')];
    const at = now();
    const checked = await guessesAtOnce([a, b], '198.51.100.1', 200, at);
    expect(checked).toBeGreaterThanOrEqual(20);
    expect(checked).toBeLessThanOrEqual(22);
    // Both know the address is blocked now, from memory.
    for (const t of [a, b]) expect(t.blockedUntil('198.51.100.1', at)).toBe(at - 1_000 + 60_000);
    expect(await guessesAtOnce([a, b], '198.51.100.1', 50, at)).toBe(0);
    // Another address has its own budget.
    expect(await guessesAtOnce([a, b], '198.51.100.2', 10, at)).toBe(10);
  });

  it('costs a valid credential from an address with no failure no Redis round trip, and gives back what a valid one reserved', async () => {
    const [a, b] = [await replica('st2:'), await replica('st2:')];
    const at = now();
    // An address with no failure: answered from memory, synchronously.
    const clean = a.attempt('198.51.100.3', at, 'valid-0');
    expect(clean).not.toBeInstanceOf(Promise);
    if (!(clean as Attempt).allowed) throw new Error('a clean address is allowed');
    (clean as AllowedAttempt).settle(false);
    // 19 failures spent across both replicas; then valid credentials, reserved and given back, leave the 20th guess.
    expect(await guessesAtOnce([a, b], '198.51.100.3', 19, at)).toBe(19);
    for (let i = 0; i < 5; i++) {
      const valid = await b.attempt('198.51.100.3', at, `valid-${i + 1}`);
      expect(valid.allowed).toBe(true);
      if (valid.allowed) valid.settle(false);
    }
    // The give-backs are sent without waiting: the shared count is back at 19 once they are in.
    await sharedCount('st2:', '198.51.100.3', at, '19');
    expect(await guessesAtOnce([a, b], '198.51.100.3', 10, at)).toBe(1);
  });

  it('reserves once for a burst repeating one secret from an address that has failed before: one guess, not hundreds', async () => {
    const [a, b] = [await replica('st4:'), await replica('st4:')];
    const at = now();
    expect(await guessesAtOnce([a, b], '198.51.100.4', 1, at)).toBe(1);
    const burst = await Promise.all(
      Array.from({ length: 300 }, () => a.attempt('198.51.100.4', at, 'one-new-key')),
    );
    expect(burst.every((attempt) => attempt.allowed)).toBe(true);
    for (const attempt of burst) if (attempt.allowed) attempt.settle(false);
    // The give-back is sent without waiting: the shared count is back at 1 once it is in.
    await sharedCount('st4:', '198.51.100.4', at, '1');
    // The budget still holds 19 guesses for the address.
    expect(a.blockedUntil('198.51.100.4', at)).toBeUndefined();
    expect(await guessesAtOnce([a], '198.51.100.4', 30, at)).toBe(19);
  });

  it('counts failures known without a check (wrong checksums) against the shared budget in a few calls, not one per failure', async () => {
    const [a, b] = [await replica('st5:'), await replica('st5:')];
    const at = now();
    const client = await replicaClient();
    await client.config('RESETSTAT');
    // The limit is 20: the first 20 are counted, the rest refused from memory.
    const answers = Array.from({ length: 300 }, () => a.failedUnchecked('198.51.100.5', at));
    expect(answers.filter((refusal) => refusal === undefined)).toHaveLength(20);
    expect(answers.at(-1)).toEqual({ allowed: false, retryAtMs: at - 1_000 + 60_000 });
    // Within half a second the shared count holds them, so the other replica refuses the address too.
    const key = `st5:{198.51.100.5}:${at - 1_000}`;
    const { value } = await waitFor(
      () => client.get(key),
      (count) => count === '20',
      { timeoutMs: 3_000 },
    );
    expect(value).toBe('20');
    // Replica b checks the first guess of an address it has not seen fail (the one per replica), and
    // counting it finds the budget spent.
    const first = await b.attempt('198.51.100.5', at, 'a-guess');
    if (first.allowed) first.settle(true);
    await waitFor(
      async () => b.blockedUntil('198.51.100.5', at),
      (until) => until !== undefined,
    );
    expect(await b.attempt('198.51.100.5', at, 'another')).toEqual({
      allowed: false,
      retryAtMs: at - 1_000 + 60_000,
    });
    const calls = Number(/cmdstat_incrby:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);
    // One for replica a's 20 failures, one for b's guess.
    expect(calls).toBe(2);
  });

  it('falls back to each replica counting on its own while Redis is down, and says so', async () => {
    const [a, b] = [await replica('st3:'), await replica('st3:')];
    await server.stop();
    try {
      const at = now();
      warnings.length = 0;
      expect(await guessesAtOnce([a], '198.51.100.4', 40, at)).toBe(20);
      expect(await guessesAtOnce([b], '198.51.100.4', 40, at)).toBe(20);
      expect(warnings.join('\n')).toContain('counting on this replica only');
    } finally {
      await server.restart();
      // Closing a connection still reconnecting would leave it retrying: wait until each is back.
      for (const c of connections) expect(await c.ready(5_000)).toBe(true);
    }
  }, 30_000);
});
