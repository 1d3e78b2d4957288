/**
 * Portal work that must not run twice at once for one consumer on any replica (counting its keys and
 * creating one, so that two creates at the same instant cannot both pass maxKeysPerConsumer): a lease
 * in the database named after the consumer, taken by each call under an id of its own and released
 * when it ends. A holder that dies leaves a lease that expires after LEASE_MS, so waiting always ends.
 */
import { randomUUID } from 'node:crypto';
import type { ManagementContext } from '../management/context.js';
import { Lease } from '../store/lease.js';

/** Far longer than a count and a create take. */
const LEASE_MS = 10_000;
const RETRY_MS = 10;

export async function oneAtATime<T>(
  name: string,
  ctx: Pick<ManagementContext, 'db' | 'clock'>,
  work: () => Promise<T>,
): Promise<T> {
  const lease = new Lease(ctx.db, name, randomUUID(), LEASE_MS, ctx.clock);
  while (!(await lease.acquire())) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  try {
    return await work();
  } finally {
    await lease.release();
  }
}
