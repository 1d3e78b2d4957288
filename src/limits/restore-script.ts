import type { RedisClient } from '../redis/connect.js';
import { defineScript } from '../redis/script.js';

/**
 * Puts places back into a window's count after Redis restarted empty (window-ledger.ts): a fixed
 * window's string, or a sliding limit's slot (ARGV[3], -1 for none) in its hash.
 */
const RESTORE_LUA = `
if tonumber(ARGV[3]) < 0 then
  redis.call('INCRBY', KEYS[1], ARGV[1])
else
  redis.call('HINCRBY', KEYS[1], ARGV[3], ARGV[1])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`;

export interface RestoreCall {
  readonly places: number;
  /** When the count expires, epoch ms. */
  readonly expiresAt: number;
  /** The sliding slot the places were taken in, or -1 for a fixed window. */
  readonly slot: number;
}

/** The script's ARGV, by position. */
export function restoreArgs(call: RestoreCall): (string | number)[] {
  return [call.places, call.expiresAt, call.slot];
}

/** Adds to the count at `counter` (KEYS[1], its only key) and sets its expiry. */
export type RestoreScript = (counter: string, call: RestoreCall) => Promise<unknown>;

/** Defines the script on `client` (at start-up: see defineScript). */
export function defineRestoreScript(client: RedisClient): RestoreScript {
  const run = defineScript(client, 'tollgateRestoreWindow', RESTORE_LUA, 1);
  return (counter, call) => run([counter], restoreArgs(call));
}
