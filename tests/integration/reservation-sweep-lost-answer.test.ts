/**
 * A sweep whose answer Redis never delivered (it hung while the sweep's script waited to run, then ran
 * it) took the records past their deadline all the same: the replica that sent it gets them back by
 * sending its token again, and no other sweep ever gets them, so each is counted once
 * (docs/decisions/0250-a-sweep-redis-never-answered.md). Two replicas' stores on a private redis-server.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createLogger } from '../../src/ops/logger.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { RedisReservationStore } from '../../src/reservations/redis-store.js';
import { RedisServer } from '../helpers/redis-server.js';

let server: RedisServer;
const connections: RedisConnections[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
}, 30_000);

afterAll(async () => {
  server?.resume();
  await Promise.all(connections.map((c) => c.close()));
  await server?.destroy();
});

async function replicaStore(): Promise<RedisReservationStore> {
  const redis = connectRedis({ redisUrl: server.url, redisClusterNodes: undefined }, createLogger('silent'));
  connections.push(redis);
  expect(await redis.ready(5_000)).toBe(true);
  return new RedisReservationStore(redis.client, redis.subscriber, 'sweep-lost:');
}

it('gives a sweep whose answer was lost its records again, and nobody else', async () => {
  const [sweeper, other] = await Promise.all([replicaStore(), replicaStore()]);
  const now = Date.now();
  const keptUntil = now + 300_000;
  const record = { id: 'rsv_due', deadlineMs: now - 1_000, holder: 'gone', body: '{"reserved":10}' };
  await sweeper.put(record);

  server.pause();
  const lost = sweeper.takeDue(now, 10, 'token-a', keptUntil);
  await expect(lost).rejects.toThrow();
  server.resume();

  // Redis ran the lost sweep on waking: another replica's sweep finds nothing due.
  expect(await other.takeDue(now, 10, 'token-b', keptUntil)).toEqual([]);
  // The first sweep's token again: what it took, as often as it asks until it is answered.
  expect(await sweeper.takeDue(now, 10, 'token-a', keptUntil)).toEqual([record]);
  expect(await sweeper.takeDue(now, 10, 'token-a', keptUntil)).toEqual([record]);
  // A later sweep with a new token takes nothing more, and the record's own take finds it taken.
  expect(await sweeper.takeDue(now, 10, 'token-c', keptUntil)).toEqual([]);
  expect(await other.take(record.id, 'token-d', keptUntil)).toBeUndefined();
  // Once kept long enough it is dropped, never handed out.
  expect(await other.takeDue(keptUntil, 10, 'token-e', keptUntil + 300_000)).toEqual([]);
  expect(await sweeper.takeDue(keptUntil, 10, 'token-a', keptUntil + 300_000)).toEqual([]);
}, 30_000);
