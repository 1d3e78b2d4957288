import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/script.js';
import { leaseBookKey } from '../limiter-keys.js';

/**
 * Puts places back into a window's count after Redis restarted empty (window-ledger.ts): a fixed
 * window's string, or a sliding limit's slot (ARGV[3], -1 for none) in its hash. Stamps the count's
 * lease book (KEYS[2]) with Redis' marker as the caller read it (`k`, ARGV[4]; '' unknown: no stamp),
 * until the count expires: a replica that has not read that marker yet has not put its own places back,
 * and the consume script answers it `lost` rather than let it decide against a count still short of them.
 */
const RESTORE_LUA = `
if tonumber(ARGV[3]) < 0 then
  redis.call('INCRBY', KEYS[1], ARGV[1])
else
  redis.call('HINCRBY', KEYS[1], ARGV[3], ARGV[1])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[2], 'k', ARGV[4])
  redis.call('PEXPIREAT', KEYS[2], ARGV[2])
end
return 1
`;

export interface RestoreCall {
  readonly places: number;
  /** When the count expires, epoch ms. */
  readonly expiresAt: number;
  /** The sliding slot the places were taken in, or -1 for a fixed window. */
  readonly slot: number;
  /** Redis' marker as the caller read it (redis-marker.ts); undefined before the first read: no stamp. */
  readonly marker?: string | undefined;
}

/** The script's ARGV, by position. */
export function restoreArgs(call: RestoreCall): (string | number)[] {
  return [call.places, call.expiresAt, call.slot, call.marker ?? ''];
}

/** Adds to the count at `counter` (KEYS[1]) and sets its expiry; stamps its lease book (KEYS[2]). */
export type RestoreScript = (counter: string, call: RestoreCall) => Promise<unknown>;

/** Defines the script on `client` (at start-up: see defineScript). */
export function defineRestoreScript(client: RedisClient): RestoreScript {
  const run = defineScript(client, 'tollgateRestoreWindow', RESTORE_LUA, 2);
  return (counter, call) => run([counter, leaseBookKey(counter)], restoreArgs(call));
}
