import type { RedisClient } from './connect.js';

/** Runs a Lua script: one EVALSHA, one EVAL only when the server has not cached it (NOSCRIPT). */
export type ScriptRunner = (keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

/**
 * ioredis' defineCommand sends EVALSHA and falls back to EVAL on NOSCRIPT (after SCRIPT FLUSH, a
 * restart or a failover), per connection, so every Cluster node gets the script on first use.
 *
 * The number of keys is fixed: Cluster auto-pipelining routes a script call by its first argument,
 * which then is the first key. Every key a script touches shares one hash slot with `keys`.
 * Define scripts at start-up: an auto-pipeline opened before the definition lacks the command.
 *
 * `args` go as one array, which ioredis flattens into the command: spread into the call, a usage push
 * for ten thousand keys (80,000 arguments) overflowed the stack inside ioredis' auto-pipeline, which
 * then failed the whole pipeline with an uncaught TypeError and ended the process.
 */
export function defineScript(client: RedisClient, name: string, lua: string, numberOfKeys: number): ScriptRunner {
  client.defineCommand(name, { lua, numberOfKeys });
  const command = (client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[name]!;
  return (keys, args) => command.call(client, ...keys, args);
}
