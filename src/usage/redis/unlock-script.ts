import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/script.js';

/**
 * Deletes the flusher lock only while it still holds the caller's token: a lock that expired and was
 * taken over by another replica stays theirs. KEYS[1]: the lock. ARGV, as `unlockArgs` builds it: the
 * token. Returns 1 when the lock was deleted, 0 when it was not the caller's.
 */
const UNLOCK_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** The script's ARGV, by position. */
export function unlockArgs(token: string): string[] {
  return [token];
}

export type UnlockScript = (lock: string, token: string) => Promise<0 | 1>;

/** Defines the script on `client` (at start-up: see defineScript). */
export function defineUnlockScript(client: RedisClient): UnlockScript {
  const run = defineScript(client, 'tollgateUnlock', UNLOCK_LUA, 1);
  return (lock, token) => run([lock], unlockArgs(token)) as Promise<0 | 1>;
}
