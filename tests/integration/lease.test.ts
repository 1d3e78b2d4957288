/** Work one replica at a time does (src/store/lease.ts), on the embedded SQLite store and a real Postgres. */
import { Lease } from '../../src/store/lease.js';
import { migrate } from '../../src/store/migrate.js';
import { STORAGES, type Storage } from '../helpers/management-storage.js';

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('a lease on %s storage', (kind) => {
  let storage: Storage;
  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
  }, 60_000);
  afterAll(() => storage.dispose());

  it('has one holder until it lapses or is released, then the next who asks', async () => {
    let now = Date.UTC(2026, 10, 23, 12);
    const lease = (holder: string) => new Lease(storage.handle.db, 'test', holder, 10_000, () => now);
    const [a, b, c] = [lease('a'), lease('b'), lease('c')];
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    // The holder renews on the way: 8 s, then 16 s later it still holds what it renewed.
    now += 8_000;
    expect(await a.acquire()).toBe(true);
    now += 8_000;
    expect([await b.acquire(), await a.acquire()]).toEqual([false, true]);
    // A holder that stops renewing (a dead replica) is replaced once its lease expires.
    now += 10_001;
    expect(await b.acquire()).toBe(true);
    expect(await a.acquire()).toBe(false);
    // Released at shutdown: the next who asks has it at once.
    await b.release();
    expect(await c.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
  });
});
