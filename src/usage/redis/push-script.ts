import type { RedisClient } from '../../redis/connect.js';
import { defineKeyListScript } from '../../redis/script.js';
import type { EncodedUsage } from './field-codec.js';
import type { UsageKeys } from './key-layout.js';

/**
 * Adds one push (the usage of some keys) to their live hashes, at most once: the push's marker is set
 * first (SET NX, with an expiry), and a push whose marker exists adds nothing. Whole or not at all.
 *
 * KEYS, as `pushKeys` lists them: the dirty set, the push's marker, then each key's live hash.
 * ARGV, as `pushArgs` builds it: the marker's time to live (s), then per key, in the order of KEYS:
 * its id, c, s, h, then c field/value pairs to add with HINCRBY, s with HINCRBYFLOAT and h to set with
 * HSET (failure log entries, field-codec.ts).
 * Returns PushReply.
 */
const PUSH_LUA = `
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[1]) then return 0 end
local a = 2
for k = 3, #KEYS do
  redis.call('SADD', KEYS[1], ARGV[a])
  local counts = tonumber(ARGV[a + 1])
  local sums = tonumber(ARGV[a + 2])
  local sets = tonumber(ARGV[a + 3])
  a = a + 4
  for _ = 1, counts do
    redis.call('HINCRBY', KEYS[k], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  for _ = 1, sums do
    redis.call('HINCRBYFLOAT', KEYS[k], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  for _ = 1, sets do
    redis.call('HSET', KEYS[k], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
end
return 1
`;

/** A key's part of a push. */
export interface PushedKey {
  readonly keyId: string;
  readonly fields: EncodedUsage;
}

export interface PushCall {
  /** Names the push: every send of the same push carries it. */
  readonly pushId: string;
  /** How long the marker outlives the push, s. */
  readonly markerTtlS: number;
  readonly keys: readonly PushedKey[];
}

/** 1 when the push was added now, 0 when its marker says it already was. */
export type PushReply = 0 | 1;

/** The script's KEYS for a push. */
export function pushKeys(layout: UsageKeys, call: PushCall): string[] {
  const keys = [layout.dirty, layout.marker(call.pushId)];
  for (const { keyId } of call.keys) keys.push(layout.live(keyId));
  return keys;
}

/** The script's ARGV, by position. Appended one by one: a key may have more fields than a spread can pass. */
export function pushArgs(call: PushCall): (string | number)[] {
  const args: (string | number)[] = [call.markerTtlS];
  for (const { keyId, fields } of call.keys) {
    args.push(keyId, fields.counts.length / 2, fields.sums.length / 2, fields.sets.length / 2);
    for (const value of fields.counts) args.push(value);
    for (const value of fields.sums) args.push(value);
    for (const value of fields.sets) args.push(value);
  }
  return args;
}

/** ARGV a key adds to a push: its id, the three pair counts and its pairs. */
export const pushArgCount = (fields: EncodedUsage): number =>
  4 + fields.counts.length + fields.sums.length + fields.sets.length;

export type PushScript = (call: PushCall) => Promise<PushReply>;

/** Defines the script on `client` for the deployment whose names `layout` gives. */
export function definePushScript(client: RedisClient, layout: UsageKeys): PushScript {
  const run = defineKeyListScript(client, PUSH_LUA);
  return (call) => run(pushKeys(layout, call), pushArgs(call)) as Promise<PushReply>;
}
