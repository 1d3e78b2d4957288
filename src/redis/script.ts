import { createHash } from 'node:crypto';
import { ReplyError } from 'ioredis';
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
export function defineScript(
  client: RedisClient,
  name: string,
  lua: string,
  numberOfKeys: number,
): ScriptRunner {
  client.defineCommand(name, { lua, numberOfKeys });
  const command = (client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[name]!;
  return (keys, args) => command.call(client, ...keys, args);
}

/**
 * A script defined once per number of keys, `names[i]` taking i + 1 (connect.ts's DIRECT_SCRIPTS):
 * each call goes as the command of its key count, whose count is fixed, so that a Cluster routes it by
 * its first key and a single Redis takes it without auto-pipelining.
 */
export function definePerKeyCount(client: RedisClient, names: readonly string[], lua: string): ScriptRunner {
  const runners = names.map((name, i) => defineScript(client, name, lua, i + 1));
  return (keys, args) => runners[keys.length - 1]!(keys, args);
}

type Eval = (
  script: string,
  numberOfKeys: number,
  keys: readonly string[],
  args: readonly (string | number)[],
) => Promise<unknown>;

/**
 * A script whose number of keys changes from call to call (one or two per API key it touches): every
 * key it touches is in KEYS, as Redis requires of scripts on a Cluster. defineCommand cannot carry a
 * varying key count to the right Cluster node (its auto-pipeline would route by the count), so this
 * sends ioredis' own EVALSHA, which ioredis routes by its first key, and EVAL when the server answers
 * NOSCRIPT (a restart, a failover, SCRIPT FLUSH). Keys and arguments go as arrays (see above).
 */
export function defineKeyListScript(client: RedisClient, lua: string): ScriptRunner {
  const sha = createHash('sha1').update(lua).digest('hex');
  const evalsha = client.evalsha.bind(client) as unknown as Eval;
  const evaluate = client.eval.bind(client) as unknown as Eval;
  return async (keys, args) => {
    try {
      return await evalsha(sha, keys.length, keys, args);
    } catch (err) {
      if (replyErrorCode(err) !== 'NOSCRIPT') throw err;
      return evaluate(lua, keys.length, keys, args);
    }
  };
}

/**
 * The code of an error Redis answered (NOSCRIPT, OOM, BUSY, ...): by the protocol, the first word of
 * the error reply. Undefined for errors of the client or the connection (timeouts, closed sockets).
 */
function replyErrorCode(err: unknown): string | undefined {
  return err instanceof ReplyError ? (err as Error).message.split(' ', 1)[0] : undefined;
}
