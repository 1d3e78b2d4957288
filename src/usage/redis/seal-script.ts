import type { RedisClient } from '../../redis/connect.js';
import { defineKeyListScript } from '../../redis/script.js';
import type { UsageKeys } from './key-layout.js';

/**
 * Keys per seal. A seal holds Redis while it runs, and every replica's limiter calls wait, for a time
 * that grows with its keys: a flush of many keys seals them in parts (decision record 0016). Well
 * below the ~8,000 values Redis' Lua can unpack into one command.
 */
export const SEAL_MAX_KEYS = 1_000;

/**
 * Seals the live hashes of the listed keys into a new batch, atomically with respect to pushes: each
 * live hash is renamed whole into the batch and its key leaves the dirty set. A listed key whose live
 * hash is gone (sealed meanwhile by a flusher that outlived its lock) is only taken off the dirty set;
 * keys pushed after the list was read stay dirty for the next seal.
 *
 * KEYS, as `sealKeys` lists them: the dirty set, the set of batches, the new batch's key set, then per
 * listed key its live hash and its hash in the batch, and last the counter of seals (a key detail's
 * read of a live hash checks it, reader.ts).
 * ARGV, as `sealArgs` builds it: the batch id, then the listed key ids (at most SEAL_MAX_KEYS), in the
 * order of KEYS. Returns SealReply.
 */
const SEAL_LUA = `
local sealed = {}
for i = 2, #ARGV do
  local live = KEYS[2 * i]
  if redis.call('EXISTS', live) == 1 then
    redis.call('RENAME', live, KEYS[2 * i + 1])
    sealed[#sealed + 1] = ARGV[i]
  end
end
if #ARGV > 1 then redis.call('SREM', KEYS[1], unpack(ARGV, 2)) end
if #sealed > 0 then
  redis.call('SADD', KEYS[3], unpack(sealed))
  redis.call('SADD', KEYS[2], ARGV[1])
  redis.call('INCR', KEYS[#KEYS])
end
return #sealed
`;

export interface SealCall {
  readonly batchId: string;
  /** Key ids read from the dirty set. */
  readonly keyIds: readonly string[];
}

/** How many keys went into the batch; 0: no batch was made. */
export type SealReply = number;

/** The script's KEYS for a seal. */
export function sealKeys(layout: UsageKeys, call: SealCall): string[] {
  const keys = [layout.dirty, layout.batches, layout.batch(call.batchId)];
  for (const keyId of call.keyIds) keys.push(layout.live(keyId), layout.batchHash(call.batchId, keyId));
  keys.push(layout.seals);
  return keys;
}

/** The script's ARGV, by position. */
export function sealArgs(call: SealCall): string[] {
  const args = [call.batchId];
  for (const keyId of call.keyIds) args.push(keyId);
  return args;
}

export type SealScript = (call: SealCall) => Promise<SealReply>;

/** Defines the script on `client` for the deployment whose names `layout` gives. */
export function defineSealScript(client: RedisClient, layout: UsageKeys): SealScript {
  const run = defineKeyListScript(client, SEAL_LUA);
  return (call) => run(sealKeys(layout, call), sealArgs(call)) as Promise<SealReply>;
}
