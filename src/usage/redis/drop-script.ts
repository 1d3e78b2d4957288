import type { RedisClient } from '../../redis/connect.js';
import { defineKeyListScript } from '../../redis/script.js';
import type { UsageKeys } from './key-layout.js';

/**
 * Removes a batch Postgres has applied from Redis: its hashes, its key set, its id in the set of
 * batches and in the set-aside set, and records the time of the flush.
 *
 * KEYS, as `dropKeys` lists them: the set of batches, the batch's key set, flushed-at, the set-aside
 * set, then the batch's hashes. ARGV, as `dropArgs` builds it: the batch id, now (epoch ms).
 */
const DROP_LUA = `
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[1], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('SET', KEYS[3], ARGV[2])
return 1
`;

export interface DropCall {
  readonly batchId: string;
  /** The keys sealed into the batch (its key set's members). */
  readonly keyIds: readonly string[];
  readonly nowMs: number;
}

/** The script's KEYS for a drop. */
export function dropKeys(layout: UsageKeys, call: DropCall): string[] {
  const keys = [layout.batches, layout.batch(call.batchId), layout.flushedAt, layout.setAside];
  for (const keyId of call.keyIds) keys.push(layout.batchHash(call.batchId, keyId));
  return keys;
}

/** The script's ARGV, by position. */
export function dropArgs(call: DropCall): (string | number)[] {
  return [call.batchId, call.nowMs];
}

export type DropScript = (call: DropCall) => Promise<unknown>;

/** Defines the script on `client` for the deployment whose names `layout` gives. */
export function defineDropScript(client: RedisClient, layout: UsageKeys): DropScript {
  const run = defineKeyListScript(client, DROP_LUA);
  return (call) => run(dropKeys(layout, call), dropArgs(call));
}
