import { Redis } from 'ioredis';
import { counterKey, leaseBookKey, slidingKey } from '../../src/limits/limiter-keys.js';
import { defineRestoreScript } from '../../src/limits/recovery/restore-script.js';
import { REDIS_URL, testKeyPrefix } from '../helpers/services.js';

// The restore script alone, against a real Redis.
const prefix = testKeyPrefix();
const client = new Redis(REDIS_URL);
const restore = defineRestoreScript(client);

afterAll(async () => {
  const keys = await client.keys(prefix + '*');
  if (keys.length > 0) await client.del(...keys);
  await client.quit();
});

describe('the restore script', () => {
  it('adds the places put back to whatever the count holds by now, and sets its expiry', async () => {
    const counter = counterKey(`${prefix}{key_restored}`, 'hour', 0);
    const expiresAt = Date.now() + 60_000;
    await restore(counter, { places: 40, expiresAt, slot: -1 });
    expect(await client.get(counter)).toBe('40');
    expect(await client.pexpiretime(counter)).toBe(expiresAt);
    // Places taken since the restart are kept: the count is their sum.
    await client.incrby(counter, 3);
    await restore(counter, { places: 7, expiresAt: expiresAt + 1, slot: -1 });
    expect(await client.get(counter)).toBe('50');
    expect(await client.pexpiretime(counter)).toBe(expiresAt + 1);
  });

  it('stamps the count’s lease book with Redis’ marker as the caller read it, until the count expires', async () => {
    const counter = counterKey(`${prefix}{key_stamped}`, 'hour', 0);
    const expiresAt = Date.now() + 60_000;
    await restore(counter, { places: 4, expiresAt, slot: -1 });
    expect(await client.hget(leaseBookKey(counter), 'k')).toBeNull();
    await restore(counter, { places: 6, expiresAt, slot: -1, marker: 'marker-2' });
    expect(await client.get(counter)).toBe('10');
    expect(await client.hget(leaseBookKey(counter), 'k')).toBe('marker-2');
    expect(await client.pexpiretime(leaseBookKey(counter))).toBe(expiresAt);
  });

  it('puts a sliding limit’s places back into the slot they were taken in', async () => {
    const count = slidingKey(`${prefix}{key_restored}`, 'minute');
    const expiresAt = Date.now() + 60_000;
    await client.hset(count, '41', '2');
    await restore(count, { places: 5, expiresAt, slot: 41 });
    await restore(count, { places: 3, expiresAt, slot: 40 });
    expect(await client.hgetall(count)).toEqual({ '40': '3', '41': '7' });
    expect(await client.pexpiretime(count)).toBe(expiresAt);
  });
});
