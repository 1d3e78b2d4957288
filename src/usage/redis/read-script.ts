import type { RedisClient } from '../../redis/connect.js';
import { defineKeyListScript } from '../../redis/script.js';

/**
 * Reads hashes in one atomic step, provided a set still holds exactly the members the caller named
 * them from: a key's pending usage (its live hash and its hash in each sealed batch, named from the
 * set of batches) or a sealed batch (its keys' hashes, named from the batch's key set). A script may
 * only touch the keys it is given, so the caller reads the set first and names the hashes; when a
 * seal or a drop changed the set in between, the script returns its members instead, to ask again.
 *
 * KEYS, as `readKeys` lists them: the set, then the hashes. ARGV, as `readArgs` builds it: the
 * members the caller read from the set. Returns ReadReply.
 */
const READ_LUA = `
local members = redis.call('SMEMBERS', KEYS[1])
local same = #members == #ARGV
if same then
  local named = {}
  for _, m in ipairs(ARGV) do named[m] = true end
  for _, m in ipairs(members) do
    if not named[m] then same = false; break end
  end
end
if not same then return {0, members} end
local out = {1}
for i = 2, #KEYS do out[i] = redis.call('HGETALL', KEYS[i]) end
return out
`;

export interface ReadCall {
  /** The set the hashes were named from. */
  readonly set: string;
  /** Its members when the caller read it. */
  readonly members: readonly string[];
  readonly hashes: readonly string[];
}

/**
 * `[1, fields of each hash, in the order given]` (field, value, ...; empty for a hash that does not
 * exist), or `[0, the set's members now]` when they are no longer those named.
 */
export type ReadReply =
  readonly [unchanged: 1, ...hashes: string[][]] | readonly [unchanged: 0, members: string[]];

/** The script's KEYS. */
export function readKeys(call: ReadCall): string[] {
  return [call.set, ...call.hashes];
}

/** The script's ARGV, by position. */
export function readArgs(call: ReadCall): readonly string[] {
  return call.members;
}

export type ReadScript = (call: ReadCall) => Promise<ReadReply>;

/** Defines the script on `client`. */
export function defineReadScript(client: RedisClient): ReadScript {
  const run = defineKeyListScript(client, READ_LUA);
  return (call) => run(readKeys(call), readArgs(call)) as Promise<ReadReply>;
}
