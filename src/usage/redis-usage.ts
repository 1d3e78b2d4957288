import { randomBytes, randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { defineScript, type ScriptRunner } from '../redis/script.js';
import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import type { UsageRepository } from './usage-repository.js';
import {
  emptyBucket,
  emptyCounts,
  emptyEndpoint,
  emptyKeyUsage,
  requestsIn,
  type KeyUsage,
  type PendingPart,
  type PendingUsage,
  type UsageBatch,
  type UsageSink,
} from './usage.js';

/*
 * Usage in Redis, on its way from the replicas to Postgres. Every key carries the one hash tag
 * `{usage}`, so on a Cluster it all lives in one slot: a push, a seal and a read are each one atomic
 * script, whatever keys they span; scripts name the per-key hashes from their arguments, which Redis
 * allows within the slot of their declared keys. (The traffic is one push per replica per second.)
 *
 *   <p>{usage}:live:<keyId>           hash: what replicas pushed for that key since the last seal
 *   <p>{usage}:dirty                  set: key ids that have a live hash
 *   <p>{usage}:batch:<batchId>        set: key ids sealed into that batch
 *   <p>{usage}:batch:<batchId>:<keyId> hash: a sealed live hash, waiting for Postgres
 *   <p>{usage}:batches                set: batch ids sealed and not yet removed
 *   <p>{usage}:push:<pushId>          marker of an applied push (60 s), so a push is never counted twice
 *   <p>{usage}:lock                   the flusher lock: a random token, with an expiry
 *   <p>{usage}:flushed-at             epoch ms of the last complete flush, by any replica
 *
 * Hash fields: `e|<endpoint>|<m>` with m = r (requests), s (successful), f (failed), d (summed
 * response ms), `c|<customerId>|<m>` with m = r, s, f, and `m|<minute start, epoch ms>|<m>` with
 * m = r, s, f, l (rate-limited), d. Names are read between the first two and the last two
 * characters, so a `|` in a path is harmless.
 */

/**
 * KEYS: dirty, marker. ARGV: marker ttl, live prefix, then per key: keyId, n, n field/value pairs.
 * The live hashes are named from ARGV: a fixed key count keeps Cluster routing on KEYS[1].
 */
const PUSH_LUA = `
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[1]) then return 0 end
local a = 3
while a <= #ARGV do
  local hash = ARGV[2] .. ARGV[a]
  redis.call('SADD', KEYS[1], ARGV[a])
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  for _ = 1, n do
    if string.sub(ARGV[a], -1) == 'd' then
      redis.call('HINCRBYFLOAT', hash, ARGV[a], ARGV[a + 1])
    else
      redis.call('HINCRBY', hash, ARGV[a], ARGV[a + 1])
    end
    a = a + 2
  end
end
return 1
`;

/**
 * Moves every live hash into a new batch, atomically with respect to pushes.
 * KEYS: dirty, batches, batch key set. ARGV: batchId, live prefix, batch hash prefix.
 */
const SEAL_LUA = `
local ids = redis.call('SMEMBERS', KEYS[1])
if #ids == 0 then return 0 end
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[2] .. id) == 1 then redis.call('RENAME', ARGV[2] .. id, ARGV[3] .. id) end
end
redis.call('RENAME', KEYS[1], KEYS[3])
redis.call('SADD', KEYS[2], ARGV[1])
return #ids
`;

/** KEYS: batch key set. ARGV: batch hash prefix. Returns keyId, fields, keyId, fields, ... */
const COLLECT_LUA = `
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGETALL', ARGV[1] .. id)
end
return out
`;

/** KEYS: batches, batch key set, flushed-at. ARGV: batchId, batch hash prefix, now ms. */
const DROP_LUA = `
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do redis.call('DEL', ARGV[2] .. id) end
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[1], ARGV[1])
redis.call('SET', KEYS[3], ARGV[3])
return 1
`;

/**
 * KEYS: live hash of the key, batches. ARGV: batch prefix base, keyId. Returns the live field list,
 * then a batch id and its field list for each sealed batch.
 */
const PENDING_LUA = `
local out = {redis.call('HGETALL', KEYS[1])}
for _, b in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  out[#out + 1] = b
  out[#out + 1] = redis.call('HGETALL', ARGV[1] .. b .. ':' .. ARGV[2])
end
return out
`;

/** Deletes the lock only while it still holds our token: an expired lock taken over stays. */
const UNLOCK_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * A marker has to outlive every send of its push: the first may run late (Redis paused, then resumed,
 * runs what it had received), and the resends are made until one is answered, within a second of
 * Redis answering again. Ten minutes cover that with room; markers cost ~100 bytes a push.
 */
const PUSH_MARKER_TTL_S = 600;
/** Script arguments per usage push: a few hundred keys (about 2 ms of Redis time). */
const PUSH_CHUNK_ARGS = 4_000;

class UsageKeys {
  readonly base: string;
  constructor(prefix: string) {
    this.base = prefix + '{usage}:';
  }
  get dirty() {
    return this.base + 'dirty';
  }
  get batches() {
    return this.base + 'batches';
  }
  get lock() {
    return this.base + 'lock';
  }
  get flushedAt() {
    return this.base + 'flushed-at';
  }
  get livePrefix() {
    return this.base + 'live:';
  }
  get batchPrefix() {
    return this.base + 'batch:';
  }
  live(keyId: string) {
    return this.livePrefix + keyId;
  }
  marker(pushId: string) {
    return this.base + 'push:' + pushId;
  }
  batch(batchId: string) {
    return this.batchPrefix + batchId;
  }
  batchHashPrefix(batchId: string) {
    return this.batchPrefix + batchId + ':';
  }
}

/** Adds a flat HGETALL reply (field, value, ...) in the layout above to `into`. */
function addFields(into: KeyUsage, flat: readonly string[]): void {
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = flat[i]!;
    const value = Number(flat[i + 1]);
    const name = field.slice(2, -2);
    const metric = field.slice(-1);
    if (field.startsWith('e|')) {
      let e = into.endpoints.get(name);
      if (!e) into.endpoints.set(name, (e = emptyEndpoint()));
      if (metric === 'r') e.requests += value;
      else if (metric === 's') e.successful += value;
      else if (metric === 'f') e.failed += value;
      else if (metric === 'd') e.totalDurationMs += value;
    } else if (field.startsWith('c|')) {
      let c = into.customers.get(name);
      if (!c) into.customers.set(name, (c = emptyCounts()));
      if (metric === 'r') c.requests += value;
      else if (metric === 's') c.successful += value;
      else if (metric === 'f') c.failed += value;
    } else if (field.startsWith('m|')) {
      const minute = Number(name);
      let m = into.minutes.get(minute);
      if (!m) into.minutes.set(minute, (m = emptyBucket()));
      if (metric === 'r') m.requests += value;
      else if (metric === 's') m.successful += value;
      else if (metric === 'f') m.failed += value;
      else if (metric === 'l') m.rateLimited += value;
      else if (metric === 'd') m.totalDurationMs += value;
    }
  }
}

/**
 * Appends the field/value pairs of one key's usage to `out`, zeros left out; returns how many pairs.
 * Appended one by one: a key with many customers has more fields than a spread can pass.
 */
function appendFields(usage: KeyUsage, out: (string | number)[]): number {
  const start = out.length;
  const put = (field: string, value: number) => {
    if (value !== 0) out.push(field, value);
  };
  for (const [endpoint, u] of usage.endpoints) {
    put(`e|${endpoint}|r`, u.requests);
    put(`e|${endpoint}|s`, u.successful);
    put(`e|${endpoint}|f`, u.failed);
    put(`e|${endpoint}|d`, u.totalDurationMs);
  }
  for (const [customer, u] of usage.customers) {
    put(`c|${customer}|r`, u.requests);
    put(`c|${customer}|s`, u.successful);
    put(`c|${customer}|f`, u.failed);
  }
  for (const [minute, u] of usage.minutes) {
    put(`m|${minute}|r`, u.requests);
    put(`m|${minute}|s`, u.successful);
    put(`m|${minute}|f`, u.failed);
    put(`m|${minute}|l`, u.rateLimited);
    put(`m|${minute}|d`, u.totalDurationMs);
  }
  return (out.length - start) / 2;
}

/** One script call's worth of a batch, and the marker it is sent under until Redis answers. */
interface Push {
  readonly marker: string;
  readonly args: (string | number)[];
  readonly requests: number;
}

/**
 * Replicas' usage sink: each push (a batch, or a few hundred of its keys) lands whole (one script)
 * in the live hashes, at most once: the script first sets the push's marker and does nothing if it
 * exists. A push keeps its marker from the moment it is cut until Redis answers it: one whose reply is
 * lost (a timeout, a dropped connection, a Redis paused for minutes) may still run, so it stays first
 * in line and is sent again, as the same push, with every later write. Applied now or already, never
 * twice; pushes after it wait, so usage reaches Redis in order.
 */
export class RedisUsageSink implements UsageSink {
  private readonly keys: UsageKeys;
  private readonly push: ScriptRunner;
  private readonly queue: Push[] = [];

  constructor(client: RedisClient, prefix: string) {
    this.keys = new UsageKeys(prefix);
    this.push = defineScript(client, 'tollgateUsagePush', PUSH_LUA, 2);
  }

  async write(batch: UsageBatch): Promise<void> {
    this.queue.push(...this.cut(batch));
    while (this.queue.length > 0) {
      const push = this.queue[0]!;
      await this.push([this.keys.dirty, this.keys.marker(push.marker)], push.args);
      this.queue.shift();
    }
  }

  heldRequests(): number {
    return this.queue.reduce((n, push) => n + push.requests, 0);
  }

  /**
   * One script per few hundred keys: a push runs in Redis for a few milliseconds, not for as long
   * as a whole second of a busy replica's keys would take (88 ms for 20,000 keys), during which every
   * replica's limiter calls would wait. A key goes whole into one push, however many fields it has.
   */
  private cut(batch: UsageBatch): Push[] {
    const pushes: Push[] = [];
    const entries = [...batch];
    let start = 0;
    while (start < entries.length) {
      const args: (string | number)[] = [PUSH_MARKER_TTL_S, this.keys.livePrefix];
      let end = start;
      while (end < entries.length && (end === start || args.length < PUSH_CHUNK_ARGS)) {
        const [keyId, usage] = entries[end++]!;
        const at = args.length;
        args.push(keyId, 0);
        const pairs = appendFields(usage, args);
        if (pairs === 0) args.length = at;
        else args[at + 1] = pairs;
      }
      if (args.length > 2) {
        pushes.push({ marker: randomBytes(12).toString('base64url'), args, requests: requestsIn(new Map(entries.slice(start, end))) });
      }
      start = end;
    }
    return pushes;
  }
}

/** What Redis still holds for a key (live and sealed batches): the detail view adds it to Postgres. */
export class RedisPendingUsage implements PendingUsage {
  private readonly keys: UsageKeys;
  private readonly read: ScriptRunner;

  constructor(
    client: RedisClient,
    prefix: string,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {
    this.keys = new UsageKeys(prefix);
    this.read = defineScript(client, 'tollgateUsagePending', PENDING_LUA, 2);
  }

  /**
   * While Redis is down the detail view shows what Postgres and this process hold rather than fail:
   * the usage in Redis is safe there and shows again once it answers.
   */
  async pending(keyId: string): Promise<PendingPart[]> {
    let reply: [string[], ...(string | string[])[]];
    try {
      reply = (await this.read([this.keys.live(keyId), this.keys.batches], [this.keys.batchPrefix, keyId])) as typeof reply;
    } catch (err) {
      this.metrics.redisErrors.inc({ operation: 'usage_pending' });
      this.logger.warn({ err: (err as Error).message, keyId }, 'usage still in Redis is left out of this key detail: Redis does not answer');
      return [];
    }
    const parts: PendingPart[] = [];
    const part = (flat: string[], batchId?: string) => {
      if (flat.length === 0) return;
      const usage = emptyKeyUsage();
      addFields(usage, flat);
      parts.push(batchId === undefined ? { usage } : { usage, batchId });
    };
    part(reply[0]);
    // Sealed batches carry their id: the reader leaves out those Postgres has applied meanwhile.
    for (let i = 1; i < reply.length; i += 2) part(reply[i + 1] as string[], reply[i] as string);
    return parts;
  }
}

export interface FlusherOptions {
  readonly intervalMs?: number;
  /** Longer than a flush ever takes; a holder that dies blocks the others at most this long. */
  readonly lockTtlMs?: number;
}

/**
 * Moves usage from Redis into Postgres, one replica at a time (a lock with an expiry), without loss
 * or double counting even when a replica dies mid-flush:
 *   1. seal: rename the live hashes into batch <id> (atomic, one script);
 *   2. apply the batch to Postgres in one transaction that also records <id> in usage_batches, so
 *      applying it again is a no-op;
 *   3. drop the batch from Redis.
 * Every flush first re-applies batches left sealed by a flusher that died between 1 and 3, and a
 * Postgres outage leaves batches sealed in Redis until it is back. The lock only saves work:
 * correctness rests on step 2 being idempotent, so a flusher that outlives its lock does no harm.
 */
export class UsageFlusher {
  private readonly keys: UsageKeys;
  private readonly seal: ScriptRunner;
  private readonly collect: ScriptRunner;
  private readonly drop: ScriptRunner;
  private readonly unlock: ScriptRunner;
  private readonly intervalMs: number;
  private readonly lockTtlMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** The step in progress, for the failure metric: lock, seal, collect, apply (Postgres) or drop. */
  private stage = 'lock';
  /** Logs once per run of failures, not once a second. */
  private failing = false;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    private readonly repository: Pick<UsageRepository, 'applyBatch'>,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    { intervalMs = 1_000, lockTtlMs = 10_000 }: FlusherOptions = {},
  ) {
    this.keys = new UsageKeys(prefix);
    this.seal = defineScript(client, 'tollgateUsageSeal', SEAL_LUA, 3);
    this.collect = defineScript(client, 'tollgateUsageCollect', COLLECT_LUA, 1);
    this.drop = defineScript(client, 'tollgateUsageDrop', DROP_LUA, 3);
    this.unlock = defineScript(client, 'tollgateUnlock', UNLOCK_LUA, 1);
    this.intervalMs = intervalMs;
    this.lockTtlMs = lockTtlMs;
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and finishes (and, if it got the lock, runs) one last flush. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** One flush if this replica gets the lock; concurrent calls share it. Never rejects. */
  flush(): Promise<void> {
    this.running ??= this.flushOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async flushOnce(): Promise<void> {
    const token = randomBytes(16).toString('hex');
    this.stage = 'lock';
    try {
      if ((await this.client.set(this.keys.lock, token, 'PX', this.lockTtlMs, 'NX')) !== 'OK') {
        await this.reportLag();
        return;
      }
    } catch (err) {
      return this.fail(err);
    }
    try {
      this.stage = 'collect';
      // A batch left by a flusher that died, or by a Postgres outage, goes first; while it can't be
      // applied nothing new is sealed, so an outage leaves one batch plus the live hashes.
      for (const batchId of (await this.client.smembers(this.keys.batches)) as string[]) await this.move(batchId);
      const batchId = randomUUID();
      this.stage = 'seal';
      const sealed = await this.seal(
        [this.keys.dirty, this.keys.batches, this.keys.batch(batchId)],
        [batchId, this.keys.livePrefix, this.keys.batchHashPrefix(batchId)],
      );
      if (sealed !== 0) await this.move(batchId);
      else await this.client.set(this.keys.flushedAt, Date.now());
      this.metrics.usageStoreLag.set(0);
      if (this.failing) this.logger.info('usage flush to Postgres works again');
      this.failing = false;
    } catch (err) {
      this.fail(err);
    } finally {
      await this.unlock([this.keys.lock], [token]).catch(() => {});
    }
  }

  /** Applies one sealed batch (again, if a dead flusher already did) and removes it from Redis. */
  private async move(batchId: string): Promise<void> {
    this.stage = 'collect';
    const flat = (await this.collect([this.keys.batch(batchId)], [this.keys.batchHashPrefix(batchId)])) as (string | string[])[];
    const batch: UsageBatch = new Map();
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const usage = emptyKeyUsage();
      addFields(usage, flat[i + 1] as string[]);
      batch.set(flat[i] as string, usage);
    }
    this.stage = 'apply';
    if (!(await this.repository.applyBatch(batchId, batch))) {
      this.logger.info({ batchId }, 'usage batch was already in Postgres; removing it from Redis');
    }
    this.stage = 'drop';
    await this.drop([this.keys.batches, this.keys.batch(batchId), this.keys.flushedAt], [batchId, this.keys.batchHashPrefix(batchId), Date.now()]);
  }

  /** Replicas without the lock still report how long ago any replica last completed a flush. */
  private async reportLag(): Promise<void> {
    const at = Number(await this.client.get(this.keys.flushedAt));
    if (at > 0) this.metrics.usageStoreLag.set(Math.max(0, Date.now() - at) / 1000);
  }

  private fail(err: unknown): void {
    this.metrics.usageFlushFailures.inc({ stage: this.stage });
    if (!this.failing) {
      this.logger.warn({ err: (err as Error).message, stage: this.stage }, 'usage flush to Postgres failed; the usage stays in Redis and is retried');
    }
    this.failing = true;
    void this.reportLag().catch(() => {});
  }
}
