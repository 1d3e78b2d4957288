import { randomUUID } from 'node:crypto';
import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, type RedisClient } from '../redis/connect.js';
import { defineScript, type ScriptRunner } from '../redis/script.js';
import type { InFlightStore, ReservationRecord, ReservationStore } from './store.js';

/**
 * KEYS[1] the records (a hash, id → JSON), KEYS[2] their deadlines (a sorted set); ARGV[1] the id,
 * ARGV[2] the taker's token, ARGV[3] until when a taken record is kept (epoch ms). A taken record
 * stays, marked with its taker's token, so that a taker whose answer was lost gets it again; nobody
 * else does. TAKE_DUE_LUA drops it once kept long enough.
 */
const TAKE_LUA = `
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return false end
local mark = ARGV[2] .. ' '
if string.sub(record, 1, 1) == '{' then
  redis.call('HSET', KEYS[1], ARGV[1], mark .. record)
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
  return record
end
if string.sub(record, 1, #mark) == mark then return string.sub(record, #mark + 1) end
return false
`;

/**
 * KEYS[3] the ids a sweep took (a set of its token's). Takes out up to ARGV[2] records whose deadline
 * is ARGV[1] (epoch ms) or before, as TAKE_LUA takes one, for the token ARGV[3] until ARGV[4], and drops
 * the taken ones kept until then (their takers counted them). A sweep whose answer was lost sends its
 * token again: it gets back what it took, and takes nothing more.
 */
const TAKE_DUE_LUA = `
local mark = ARGV[3] .. ' '
local records = {}
local taken = redis.call('SMEMBERS', KEYS[3])
if #taken > 0 then
  for i = 1, #taken do
    local record = redis.call('HGET', KEYS[1], taken[i])
    if record and string.sub(record, 1, #mark) == mark then records[#records + 1] = string.sub(record, #mark + 1) end
  end
  return records
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #ids do
  local record = redis.call('HGET', KEYS[1], ids[i])
  if record and string.sub(record, 1, 1) == '{' then
    redis.call('HSET', KEYS[1], ids[i], mark .. record)
    redis.call('ZADD', KEYS[2], ARGV[4], ids[i])
    redis.call('SADD', KEYS[3], ids[i])
    records[#records + 1] = record
  else
    redis.call('HDEL', KEYS[1], ids[i])
    redis.call('ZREM', KEYS[2], ids[i])
  end
end
if #records > 0 then redis.call('PEXPIREAT', KEYS[3], ARGV[4]) end
return records
`;

/**
 * KEYS as TAKE_LUA; ARGV[1] a deadline, ARGV[2] how many records follow as id and record pairs, each
 * due then; the ids after them, records written before, are due then too unless gone (swept).
 */
const WRITE_LUA = `
local written = tonumber(ARGV[2])
for i = 3, 2 + 2 * written, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
end
for i = 3 + 2 * written, #ARGV do
  redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[i])
end
return 0
`;

/**
 * Reservations in Redis, so that any replica settles any of them exactly once: a record is taken out
 * by one script call (take), which only one caller can win; those never settled are taken out by the
 * replica that sweeps them first. Both keys share one hash slot. A replica is asked to give back a
 * reservation's places on a channel of its own.
 */
export class RedisReservationStore implements ReservationStore, InFlightStore {
  readonly replica = randomUUID();
  readonly shared = true;
  private readonly keys: [string, string];
  private readonly channel: string;
  private readonly channelPrefix: string;
  private readonly takeScript: ScriptRunner;
  private readonly takeDueScript: ScriptRunner;
  private readonly writeScript: ScriptRunner;
  private listener: ((id: string) => void) | undefined;
  private asked: ((message: string) => Promise<void>) | undefined;
  /** This replica's questions to others, by number, until answered or given up. */
  private readonly waiting = new Map<number, () => void>();
  private asks = 0;
  /** Resolves once this replica hears on its channel (rejections are dropped: it resubscribes on reconnect). */
  readonly subscribed: Promise<unknown>;
  /**
   * On this replica's channel: a reservation's id (free its places), `?<n> <replica> <message>` (a
   * question from that replica, answered `!<n>` on its channel once acted on) or `!<n>` (an answer).
   */
  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.channel) return;
    if (message.startsWith('!')) return this.waiting.get(Number(message.slice(1)))?.();
    if (!message.startsWith('?')) return this.listener?.(message);
    const [number, from] = message.slice(1).split(' ', 2) as [string, string];
    const question = message.slice(number.length + from.length + 3);
    void (this.asked?.(question) ?? Promise.resolve()).then(
      () => this.client.publish(this.channelPrefix + from, `!${number}`),
      () => undefined,
    );
  };

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    prefix: string,
  ) {
    const records = `${prefix}{reservations}`;
    this.keys = [records, `${records}:due`];
    this.channelPrefix = `${prefix}reservation-free:`;
    this.channel = this.channelPrefix + this.replica;
    this.takeScript = defineScript(client, 'tollgateReservationTake', TAKE_LUA, 2);
    this.takeDueScript = defineScript(client, 'tollgateReservationTakeDue', TAKE_DUE_LUA, 3);
    this.writeScript = defineScript(client, 'tollgateReservationWrite', WRITE_LUA, 2);
    subscriber.on('message', this.onMessage);
    this.subscribed = subscriber.subscribe(this.channel).catch(() => undefined);
  }

  put(record: ReservationRecord): Promise<void> {
    return this.write([record], [], record.deadlineMs);
  }

  /** One script call, whatever the number of records: the in-flight requests of a turn. */
  async write(
    records: readonly ReservationRecord[],
    open: readonly string[],
    deadlineMs: number,
  ): Promise<void> {
    const pairs = records.flatMap((record) => [record.id, JSON.stringify(record)]);
    await this.writeScript(this.keys, [deadlineMs, records.length, ...pairs, ...open]);
  }

  async take(id: string, token: string, keptUntilMs: number): Promise<ReservationRecord | undefined> {
    const text = (await this.takeScript(this.keys, [id, token, keptUntilMs])) as string | null;
    return text === null ? undefined : (JSON.parse(text) as ReservationRecord);
  }

  async takeDue(
    nowMs: number,
    max: number,
    token: string,
    keptUntilMs: number,
  ): Promise<ReservationRecord[]> {
    const swept = `${this.keys[0]}:swept:${token}`;
    const texts = (await this.takeDueScript(
      [...this.keys, swept],
      [nowMs, max, token, keptUntilMs],
    )) as string[];
    return texts.map((text) => JSON.parse(text) as ReservationRecord);
  }

  free(holder: string, id: string): void {
    if (holder === this.replica) return this.listener?.(id);
    // Unanswered: the holder's places lapse as a gateway's unsettled places do.
    this.client.publish(this.channelPrefix + holder, id).catch(() => undefined);
  }

  onFree(listener: (id: string) => void): void {
    this.listener = listener;
  }

  ask(holder: string, message: string, waitMs: number): Promise<boolean> {
    const number = ++this.asks;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => answered(false), waitMs);
      const answered = (yes: boolean) => {
        clearTimeout(timer);
        this.waiting.delete(number);
        resolve(yes);
      };
      this.waiting.set(number, () => answered(true));
      // Nobody listening on its channel: it is gone (or cut off), no need to wait.
      this.client.publish(this.channelPrefix + holder, `?${number} ${this.replica} ${message}`).then(
        (listeners) => listeners === 0 && answered(false),
        () => answered(false),
      );
    });
  }

  onAsk(listener: (message: string) => Promise<void>): void {
    this.asked = listener;
  }

  async claim(id: string): Promise<boolean> {
    // Both contenders claim within a wait of each other: a minute outlives any of them.
    const claimed = await this.client.set(`${this.keys[0]}:claim:${id}`, '1', 'PX', 60_000, 'NX');
    return claimed === 'OK';
  }

  /** The subscriber belongs to the composition root, which closes it after every user is done. */
  async close(): Promise<void> {
    this.subscriber.off('message', this.onMessage);
    if (this.subscriber.status === 'ready')
      await settledWithin(this.subscriber.unsubscribe(this.channel), CLOSE_WAIT_MS);
  }
}
