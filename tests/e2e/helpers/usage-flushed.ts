import type { Redis } from 'ioredis';
import { hit, keyWithPlan, totalOn, waitFor } from './replicas.js';
import type { Tollgate } from './tollgate.js';

/**
 * Resolves once each of `replicas` has handed over the usage it recorded before the call: a marker
 * request through each, on a key of its own, shows in `reader`'s detail, and a replica hands over
 * what it recorded in order, in one batch.
 */
export async function flushedEverywhere(replicas: readonly Tollgate[], reader: Tollgate): Promise<void> {
  const marker = await keyWithPlan(reader, 'flush-marker', 1000);
  for (const t of replicas) expect(await hit(t, marker.secret)).toBe(200);
  await waitFor(
    () => totalOn(reader, marker.id),
    (n) => n === replicas.length,
    { timeoutMs: 10_000, what: 'the marker request of each replica counted' },
  );
}

/**
 * Whether the Redis of a deployment under `prefix` holds no usage waiting for Postgres: no key's
 * pushes left to seal, no sealed batch left to move. From then on Postgres has everything counted.
 */
export async function usageDrained(redis: Pick<Redis, 'scard'>, prefix: string): Promise<boolean> {
  const [dirty, batches] = await Promise.all([
    redis.scard(prefix + '{usage}:dirty'),
    redis.scard(prefix + '{usage}:batches'),
  ]);
  return dirty === 0 && batches === 0;
}
